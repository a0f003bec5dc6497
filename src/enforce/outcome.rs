//! The typed end of one governed request: what was asked for, what the
//! policy said (if it was reached), how an ask was settled, and the final
//! verdict with its reason. Every enforcement point maps this one value to
//! its wire (an audit line, an MCP answer, a hook's output); none decides
//! anything of its own.

use std::sync::Arc;

use crate::{Decision, Source, TargetKind, Verdict};

/// How an `ask` was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Settled {
    /// Nobody was asked (the policy allowed or denied, or the request was
    /// refused before the policy).
    NotAsked,
    /// A live `allow always` grant settled it.
    Grant,
    /// The approver allowed this call once.
    Once,
    /// The approver allowed it always (a grant was recorded).
    Always,
    /// The approver denied it.
    Denied,
    /// The approver denied it and asked the agent to halt.
    Halted,
    /// Asking failed (the approver erred, panicked or timed out), or
    /// nobody could be asked.
    Failed,
    /// The host asks the person itself and the enforcement point never
    /// learns the answer (Claude Code's permission hook).
    Host,
}

impl Settled {
    /// The word an audit line and a decision event carry: `none`, `grant`,
    /// `once`, `always`, `denied`, `halted`, `failed` or `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            Settled::NotAsked => "none",
            Settled::Grant => "grant",
            Settled::Once => "once",
            Settled::Always => "always",
            Settled::Denied => "denied",
            Settled::Halted => "halted",
            Settled::Failed => "failed",
            Settled::Host => "host",
        }
    }

    /// The final verdict and reason word of a policy decision settled this
    /// way: an ask a person (or a grant) allowed is `allow` with the
    /// policy's reason; one refused is `deny` with `ask_denied`,
    /// `ask_halt` or `ask_failed`; an ask the host settles stays `ask`.
    fn settle(self, d: &Decision) -> (Verdict, &'static str) {
        match (d.decision, self) {
            (Verdict::Ask, Settled::Once | Settled::Always | Settled::Grant) => {
                (Verdict::Allow, d.reason.as_str())
            }
            (Verdict::Ask, Settled::Host) => (Verdict::Ask, d.reason.as_str()),
            (Verdict::Ask, Settled::Denied) => (Verdict::Deny, "ask_denied"),
            (Verdict::Ask, Settled::Halted) => (Verdict::Deny, "ask_halt"),
            (Verdict::Ask, _) => (Verdict::Deny, "ask_failed"),
            (v, _) => (v, d.reason.as_str()),
        }
    }
}

/// Who settled a request: a stage of the decision procedure (the
/// policy's sources, `visibility`, `request`, `protected`) or a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum By {
    /// A stage of the decision procedure, or the request itself.
    Stage(Source),
    /// A hook that denied, failed or halted.
    Hook,
}

impl By {
    /// The source word of an audit line (`deny`, `visibility`, `request`,
    /// `hook`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            By::Stage(s) => s.as_str(),
            By::Hook => "hook",
        }
    }
}

/// How one governed request ended: the target, the policy's decision (when
/// the policy was reached), how an ask was settled, who settled it, the
/// final verdict and its reason word. The audit line
/// ([`AuditRecord::of`](super::AuditRecord::of)) and every answer
/// a front door gives are mappings of it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Outcome {
    /// The server's id.
    pub server: Arc<str>,
    /// A tool call, a resource read or a prompt get.
    pub kind: TargetKind,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<String>,
    /// The policy's decision (for an ask, before it was settled), when the
    /// policy was reached.
    pub decision: Option<Decision>,
    /// How an ask was settled.
    pub settled: Settled,
    /// Who settled the request.
    pub by: By,
    /// The final verdict: `allow` (it goes to the server) or `deny`
    /// (nothing is sent); `ask` only where the host asks itself.
    pub verdict: Verdict,
    /// The reason word: the policy's, `ask_denied`, `ask_halt`,
    /// `ask_failed`, or the refusal's (`unknown_tool`, `hidden`,
    /// `invalid_arguments`, `hook_denied`, `hook_failed`, `hook_halt`,
    /// `audit_failed`, ...).
    pub reason: &'static str,
    /// The hook that denied, failed or halted.
    pub hook_id: Option<String>,
    /// `sha256:` of the canonical arguments, where it was asked for (an
    /// audit trail or an observer is set).
    pub args_digest: Option<String>,
}

impl Outcome {
    /// A request the policy decided, an ask settled as `settled` says.
    pub fn decided(
        server: Arc<str>,
        kind: TargetKind,
        name: Option<&str>,
        decision: Decision,
        settled: Settled,
    ) -> Self {
        let (verdict, reason) = settled.settle(&decision);
        Outcome {
            server,
            kind,
            name: name.map(String::from),
            by: By::Stage(decision.source),
            decision: Some(decision),
            settled,
            verdict,
            reason,
            hook_id: None,
            args_digest: None,
        }
    }

    /// A request refused before any policy decision, by what `by` and
    /// `reason` say.
    pub fn refused(
        server: Arc<str>,
        kind: TargetKind,
        name: Option<&str>,
        by: By,
        reason: &'static str,
    ) -> Self {
        Outcome {
            server,
            kind,
            name: name.map(String::from),
            decision: None,
            settled: Settled::NotAsked,
            by,
            verdict: Verdict::Deny,
            reason,
            hook_id: None,
            args_digest: None,
        }
    }

    /// The request whose audit line could not be written: refused
    /// (`audit_failed`), whatever was decided, and nothing is sent.
    pub fn audit_failed(&self) -> Self {
        Outcome {
            decision: None,
            settled: Settled::NotAsked,
            by: By::Stage(Source::Request),
            verdict: Verdict::Deny,
            reason: "audit_failed",
            hook_id: None,
            ..self.clone()
        }
    }

    /// With the hook that refused.
    pub fn with_hook(mut self, hook_id: Option<&str>) -> Self {
        self.hook_id = hook_id.map(String::from);
        self
    }

    /// With the arguments' digest.
    pub fn with_digest(mut self, digest: Option<String>) -> Self {
        self.args_digest = digest;
        self
    }

    /// The deciding rule, when a rule decided.
    pub fn rule_id(&self) -> Option<&str> {
        self.decision.as_ref().and_then(|d| d.rule_id.as_deref())
    }

    /// Whether the person asked the agent to stop (`deny and halt`).
    pub fn is_halt(&self) -> bool {
        self.settled == Settled::Halted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;

    fn ask() -> Decision {
        Decision::new(Verdict::Ask, Source::Ask, Reason::AskRule)
    }

    #[test]
    fn an_ask_ends_as_it_was_settled() {
        let end = |s: Settled| {
            let o = Outcome::decided("fs".into(), TargetKind::Tool, Some("w"), ask(), s);
            (o.verdict, o.reason)
        };
        assert_eq!(end(Settled::Once), (Verdict::Allow, "ask_rule"));
        assert_eq!(end(Settled::Always), (Verdict::Allow, "ask_rule"));
        assert_eq!(end(Settled::Grant), (Verdict::Allow, "ask_rule"));
        assert_eq!(end(Settled::Host), (Verdict::Ask, "ask_rule"));
        assert_eq!(end(Settled::Denied), (Verdict::Deny, "ask_denied"));
        assert_eq!(end(Settled::Halted), (Verdict::Deny, "ask_halt"));
        assert_eq!(end(Settled::Failed), (Verdict::Deny, "ask_failed"));
        assert_eq!(end(Settled::NotAsked), (Verdict::Deny, "ask_failed"));
        let deny = Decision::new(Verdict::Deny, Source::Deny, Reason::DenyRule);
        let o = Outcome::decided("fs".into(), TargetKind::Tool, None, deny, Settled::NotAsked);
        assert_eq!(
            (o.verdict, o.reason, o.by),
            (Verdict::Deny, "deny_rule", By::Stage(Source::Deny))
        );
    }

    #[test]
    fn a_failed_audit_keeps_the_target_and_drops_the_decision() {
        let o = Outcome::decided(
            "fs".into(),
            TargetKind::Tool,
            Some("w"),
            ask(),
            Settled::Once,
        )
        .with_digest(Some("sha256:00".into()))
        .audit_failed();
        assert_eq!(
            (o.verdict, o.reason, o.rule_id()),
            (Verdict::Deny, "audit_failed", None)
        );
        assert_eq!(
            (o.name.as_deref(), o.args_digest.as_deref()),
            (Some("w"), Some("sha256:00"))
        );
    }
}
