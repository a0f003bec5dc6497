//! The answer: a verdict, the stage that gave it, why, and which rule.

use std::sync::Arc;

use serde::Serialize;

use crate::syntax::Span;

/// `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// The stage of the decision procedure that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Visibility,
    Deny,
    Pin,
    Ask,
    Allow,
    Default,
    /// The request itself: a resource URI that cannot be normalized, a
    /// server id holding `/`.
    Request,
}

/// Why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Hidden,
    DenyRule,
    AskRule,
    AllowRule,
    PredicateFailed,
    NoApprover,
    DefinitionChanged,
    NoRule,
    OutOfScope,
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
pub struct Decision {
    pub decision: Verdict,
    pub source: Source,
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
