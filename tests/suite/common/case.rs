//! Semantics tests that read like the docs:
//!
//! ```ignore
//! Case::policy(r#"policy p { allow r1: "a/b" }"#)
//!     .tool("a", "b")
//!     .expect(Verdict::Allow, Reason::AllowRule, Some("r1"));
//! ```
//!
//! Every decision a case checks is also checked twice more: `explain` must
//! reach the same decision, and the policy after `mcppol fmt` (reloaded)
//! must decide the same way. So each semantics test is also a test of the
//! explanation and of the formatter.

use std::cell::OnceCell;
use std::sync::Arc;

use mcppol::{
    format, Decision, LoadOptions, Policy, PolicySet, Reason, Request, Source, TargetKind,
    ToolApproval, Verdict,
};
use serde_json::Value;

/// A policy under test.
pub struct Case {
    text: String,
    options: LoadOptions,
    policy: Arc<Policy>,
    /// The policy after `fmt`, loaded on first use.
    formatted: OnceCell<Arc<Policy>>,
}

fn load(text: &str, options: &LoadOptions) -> Arc<Policy> {
    let set = PolicySet::from_text_with("test.mcppol", text, options)
        .unwrap_or_else(|e| panic!("{}", e.render(false)));
    set.pick(None).unwrap().clone()
}

impl Case {
    /// A file holding one policy; it must load.
    pub fn policy(text: &str) -> Case {
        Case::policy_with(text, LoadOptions::default())
    }

    /// Like [`Case::policy`], with the host's predicates.
    pub fn policy_with(text: &str, options: LoadOptions) -> Case {
        Case {
            policy: load(text, &options),
            text: text.to_string(),
            options,
            formatted: OnceCell::new(),
        }
    }

    /// The compiled policy, for what the builder does not cover.
    pub fn compiled(&self) -> &Policy {
        &self.policy
    }

    /// A call of `name` on `server`.
    pub fn tool(&self, server: &str, name: &str) -> Req<'_> {
        self.request(TargetKind::Tool, server, name)
    }

    /// A read of `uri` on `server`.
    pub fn resource(&self, server: &str, uri: &str) -> Req<'_> {
        self.request(TargetKind::Resource, server, uri)
    }

    /// A get of prompt `name` on `server`.
    pub fn prompt(&self, server: &str, name: &str) -> Req<'_> {
        self.request(TargetKind::Prompt, server, name)
    }

    fn request(&self, kind: TargetKind, server: &str, name: &str) -> Req<'_> {
        Req {
            case: self,
            kind,
            server: server.to_string(),
            name: name.to_string(),
            args: None,
            annotations: None,
            taint: Vec::new(),
            principal: None,
            assigns: None,
            approver: true,
            approval: ToolApproval::Approved,
            trusted: false,
            cwd: None,
        }
    }

    fn formatted(&self) -> &Policy {
        self.formatted.get_or_init(|| {
            let text = format("test.mcppol", &self.text)
                .unwrap_or_else(|e| panic!("fmt refused the policy: {e:?}\n{}", self.text));
            load(&text, &self.options)
        })
    }
}

/// One request to a [`Case`], built as [`Request`] is.
pub struct Req<'c> {
    case: &'c Case,
    kind: TargetKind,
    server: String,
    name: String,
    args: Option<Value>,
    annotations: Option<Value>,
    taint: Vec<String>,
    principal: Option<String>,
    assigns: Option<Value>,
    approver: bool,
    approval: ToolApproval,
    trusted: bool,
    cwd: Option<String>,
}

/// The source a reason implies (and for a failed predicate, the verdict).
fn source_of(verdict: Verdict, reason: Reason) -> Source {
    match reason {
        Reason::Hidden => Source::Visibility,
        Reason::DenyRule => Source::Deny,
        Reason::AskRule | Reason::NoApprover => Source::Ask,
        Reason::AllowRule => Source::Allow,
        Reason::PredicateFailed if verdict == Verdict::Deny => Source::Deny,
        Reason::PredicateFailed => Source::Ask,
        Reason::DefinitionChanged => Source::Pin,
        Reason::BadServer | Reason::BadUri => Source::Request,
        _ => Source::Default,
    }
}

impl<'c> Req<'c> {
    /// The request's working folder.
    pub fn cwd(mut self, cwd: &str) -> Self {
        self.cwd = Some(cwd.to_string());
        self
    }

    /// The call's arguments.
    pub fn args(mut self, args: Value) -> Self {
        self.args = Some(args);
        self
    }

    /// The tool's MCP annotations.
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Servers whose output is in the model's context.
    pub fn taint(mut self, servers: &[&str]) -> Self {
        self.taint = servers.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Who the call is made for.
    pub fn principal(mut self, principal: &str) -> Self {
        self.principal = Some(principal.to_string());
        self
    }

    /// Host data for `assigns.KEY`.
    pub fn assigns(mut self, assigns: Value) -> Self {
        self.assigns = Some(assigns);
        self
    }

    /// No person can be asked.
    pub fn no_approver(mut self) -> Self {
        self.approver = false;
        self
    }

    /// The tool against its approved fingerprint.
    pub fn approval(mut self, approval: ToolApproval) -> Self {
        self.approval = approval;
        self
    }

    /// The host trusts the server's annotations.
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// The decision, checked against `explain` and against the formatted
    /// policy.
    pub fn decision(self) -> Decision {
        let taint: Vec<&str> = self.taint.iter().map(String::as_str).collect();
        let mut request = Request::new(self.kind, &self.server, &self.name)
            .with_taint(&taint)
            .with_approval(self.approval)
            .with_trusted_server(self.trusted);
        if let Some(a) = &self.args {
            request = request.with_args(a);
        }
        if let Some(a) = &self.annotations {
            request = request.with_annotations(a);
        }
        if let Some(p) = &self.principal {
            request = request.with_principal(p);
        }
        if let Some(a) = &self.assigns {
            request = request.with_assigns(a);
        }
        if !self.approver {
            request = request.without_approver();
        }
        if let Some(c) = &self.cwd {
            request = request.with_cwd(c);
        }
        let policy = &self.case.policy;
        let decision = policy.decide(&request);
        let explained = policy.explain(&request);
        assert_eq!(
            explained.decision,
            decision,
            "explain disagrees on {request:?}\n{}",
            explained.render(policy)
        );
        let after_fmt = self.case.formatted().decide(&request);
        assert_eq!(
            (
                after_fmt.decision,
                after_fmt.source,
                after_fmt.reason,
                &after_fmt.rule_id
            ),
            (
                decision.decision,
                decision.source,
                decision.reason,
                &decision.rule_id
            ),
            "the formatted policy decides {request:?} differently"
        );
        decision
    }

    /// The whole decision: verdict, reason (and the source it implies) and
    /// the deciding rule's id.
    pub fn expect(self, verdict: Verdict, reason: Reason, rule: Option<&str>) -> &'c Case {
        let case = self.case;
        let what = format!("{:?} {}/{}", self.kind, self.server, self.name);
        let d = self.decision();
        assert_eq!(
            (d.decision, d.source, d.reason, d.rule_id.as_deref()),
            (verdict, source_of(verdict, reason), reason, rule),
            "{what}"
        );
        case
    }

    /// Only the verdict.
    pub fn verdict(self, verdict: Verdict) -> &'c Case {
        let case = self.case;
        let what = format!("{:?} {}/{}", self.kind, self.server, self.name);
        assert_eq!(self.decision().decision, verdict, "{what}");
        case
    }

    /// Only the reason.
    pub fn reason(self, reason: Reason) -> &'c Case {
        let case = self.case;
        let what = format!("{:?} {}/{}", self.kind, self.server, self.name);
        assert_eq!(self.decision().reason, reason, "{what}");
        case
    }

    /// Only the stage that decided.
    pub fn source(self, source: Source) -> &'c Case {
        let case = self.case;
        let what = format!("{:?} {}/{}", self.kind, self.server, self.name);
        assert_eq!(self.decision().source, source, "{what}");
        case
    }

    /// Only the deciding rule's id (`None`: no rule decided).
    pub fn rule(self, rule: Option<&str>) -> &'c Case {
        let case = self.case;
        let what = format!("{:?} {}/{}", self.kind, self.server, self.name);
        assert_eq!(self.decision().rule_id.as_deref(), rule, "{what}");
        case
    }
}
