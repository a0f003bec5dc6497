//! The answer: a verdict, the stage that gave it, why, and which rule.
//! The evaluator makes one; every front door maps it to its own wire.

use serde::Serialize;
use smol_str::SmolStr;

use super::Span;

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
    /// A budget (`limit`) that is spent.
    Limit,
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
    /// The enforcement point's fixed rule, before any policy rule: a write
    /// to the policy files it enforces or to its state folder
    /// (`crate::protected`).
    Protected,
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
    /// A write to a policy file the enforcement point enforces, the
    /// `.mcppoltest` and lock files beside it, or its state folder: refused
    /// whatever the policy says.
    ProtectedPolicy,
    /// A budget (`limit`) the call matches is spent for its window, or its
    /// counters could not be read.
    LimitExceeded,
}

macro_rules! as_str {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            /// The name, as JSON and the docs spell it.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }

            /// The value of a name [`as_str`](Self::as_str) gives; `None`
            /// for any other text (a binding reading a decision back).
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($s => Some(Self::$v),)* _ => None }
            }
        }
    };
}

as_str!(Verdict { Allow => "allow", Ask => "ask", Deny => "deny" });
as_str!(Source { Visibility => "visibility", Deny => "deny", Limit => "limit", Pin => "pin", Ask => "ask", Allow => "allow", Default => "default", Request => "request", Protected => "protected" });
as_str!(Reason {
    Hidden => "hidden", DenyRule => "deny_rule", AskRule => "ask_rule", AllowRule => "allow_rule",
    PredicateFailed => "predicate_failed", NoApprover => "no_approver",
    DefinitionChanged => "definition_changed", NoRule => "no_rule",
    OutOfScope => "out_of_scope", NoPolicy => "no_policy",
    BadUri => "bad_uri", BadServer => "bad_server", ProtectedPolicy => "protected_policy",
    LimitExceeded => "limit_exceeded",
});

/// A decision.
///
/// Serialized (serde) it is the object `mcppol eval` prints: `decision`,
/// `source`, `reason`, `rule_id`, then `policy` (the policy's name; absent
/// for `no_policy`) and `line` (the deciding rule's 1-based line; absent
/// when no rule decided).
///
/// ```
/// # use mcppol::{PolicySet, Request};
/// let set = PolicySet::from_text("p.mcppol", "policy p {\n  deny \"*/rm\"\n}")
///     .map_err(|e| e.render(false))?;
/// let d = set.get("p").ok_or("no policy")?.decide(&Request::tool("fs", "rm"));
/// assert_eq!(
///     serde_json::to_string(&d)?,
///     r#"{"decision":"deny","source":"deny","reason":"deny_rule","rule_id":"deny:0","policy":"p","line":2}"#
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    pub rule_id: Option<SmolStr>,
    /// The name of the policy that decided; `None` for `no_policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<SmolStr>,
    /// The 1-based line of the deciding rule in its policy file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
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
            policy: None,
            line: None,
            rule_span: None,
        }
    }

    /// The decision for a request that names a policy that is not loaded.
    pub fn no_policy() -> Self {
        Decision::new(Verdict::Deny, Source::Default, Reason::NoPolicy)
    }

    /// The decision of the fixed rule every enforcement point applies
    /// before its policy: a write to a protected file (`deny`, `source:
    /// protected`, `reason: protected_policy`, no rule id).
    pub fn protected() -> Self {
        Decision::new(Verdict::Deny, Source::Protected, Reason::ProtectedPolicy)
    }

    /// Whether the call goes through without asking.
    pub fn is_allow(&self) -> bool {
        self.decision == Verdict::Allow
    }

    /// The JSON object `mcppol eval` prints (what serde gives).
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert("decision".into(), self.decision.as_str().into());
        map.insert("source".into(), self.source.as_str().into());
        map.insert("reason".into(), self.reason.as_str().into());
        map.insert("rule_id".into(), self.rule_id.as_deref().into());
        if let Some(policy) = &self.policy {
            map.insert("policy".into(), policy.as_str().into());
        }
        if let Some(line) = self.line {
            map.insert("line".into(), line.into());
        }
        serde_json::Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_json_is_what_serde_gives() {
        let mut d = Decision::new(Verdict::Deny, Source::Deny, Reason::DenyRule);
        assert_eq!(serde_json::to_value(&d).unwrap(), d.to_json());
        d.rule_id = Some(SmolStr::new("x"));
        d.policy = Some(SmolStr::new("p"));
        d.line = Some(3);
        assert_eq!(serde_json::to_value(&d).unwrap(), d.to_json());
        assert_eq!(
            d.to_json().to_string(),
            r#"{"decision":"deny","source":"deny","reason":"deny_rule","rule_id":"x","policy":"p","line":3}"#
        );
    }
}
