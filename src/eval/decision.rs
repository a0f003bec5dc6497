//! The answer: a verdict, the stage that gave it, why, and which rule.

use std::sync::Arc;

use serde::Serialize;

use crate::syntax::Span;

/// `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The call goes through.
    Allow,
    /// A person approves or refuses the call first.
    Ask,
    /// The call is refused.
    Deny,
}

/// The stage of the decision procedure that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Source {
    /// The `tools {}` block hides the tool.
    Visibility,
    /// A deny rule.
    Deny,
    /// The tool's definition changed since it was approved (`pin_tools`).
    Pin,
    /// An ask rule.
    Ask,
    /// An allow rule.
    Allow,
    /// No rule decided: the policy's default, its scope, or no policy.
    Default,
    /// The request itself: a resource URI that cannot be normalized, a
    /// server id holding `/`.
    Request,
}

/// Why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The tool is hidden by the `tools {}` block.
    Hidden,
    /// A deny rule matched.
    DenyRule,
    /// An ask rule matched.
    AskRule,
    /// An allow rule matched.
    AllowRule,
    /// A deny or ask rule matched because a predicate of its condition
    /// could not be decided.
    PredicateFailed,
    /// The request would be asked about, but no person can be asked.
    NoApprover,
    /// The tool's definition differs from its approved fingerprint.
    DefinitionChanged,
    /// No rule matched: the default decided.
    NoRule,
    /// The policy does not govern this kind of request (`scope`).
    OutOfScope,
    /// The request names a policy that is not loaded.
    NoPolicy,
    /// A resource URI that cannot be normalized (RFC 3986 section 6): bad
    /// percent encoding, an encoded `/`, `\` or NUL in its path.
    BadUri,
    /// A server id that holds `/`: `server/tool` would split two ways.
    BadServer,
}

macro_rules! as_str {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            /// The name, as JSON and the docs spell it.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
        }
    };
}

as_str!(Verdict { Allow => "allow", Ask => "ask", Deny => "deny" });
as_str!(Source { Visibility => "visibility", Deny => "deny", Pin => "pin", Ask => "ask", Allow => "allow", Default => "default", Request => "request" });
as_str!(Reason {
    Hidden => "hidden", DenyRule => "deny_rule", AskRule => "ask_rule", AllowRule => "allow_rule",
    PredicateFailed => "predicate_failed", NoApprover => "no_approver",
    DefinitionChanged => "definition_changed", NoRule => "no_rule",
    OutOfScope => "out_of_scope", NoPolicy => "no_policy",
    BadUri => "bad_uri", BadServer => "bad_server",
});

/// A decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Decision {
    /// Allow, ask or deny.
    pub decision: Verdict,
    /// The stage that decided.
    pub source: Source,
    /// Why.
    pub reason: Reason,
    /// The deciding rule's id; `None` for visibility, the pin, the default,
    /// out-of-scope and a refused request.
    pub rule_id: Option<Arc<str>>,
    /// Where the deciding rule is written.
    #[serde(skip)]
    pub rule_span: Option<Span>,
}

impl Decision {
    pub(crate) fn new(decision: Verdict, source: Source, reason: Reason) -> Self {
        Decision {
            decision,
            source,
            reason,
            rule_id: None,
            rule_span: None,
        }
    }

    /// The decision for a request that names a policy that is not loaded.
    pub fn no_policy() -> Self {
        Decision::new(Verdict::Deny, Source::Default, Reason::NoPolicy)
    }

    /// Whether the call goes through without asking.
    pub fn is_allow(&self) -> bool {
        self.decision == Verdict::Allow
    }

    /// The JSON object `mcppol eval` prints.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "decision": self.decision.as_str(),
            "source": self.source.as_str(),
            "reason": self.reason.as_str(),
            "rule_id": self.rule_id.as_deref(),
        })
    }
}
