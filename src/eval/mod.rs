//! Request to decision: the fixed precedence of the contract,
//! `visibility > deny > pin > ask > allow > default`.

mod condition;
mod decision;
pub mod explain;
pub mod owned;
mod request;

use std::borrow::Cow;
use std::sync::Arc;

pub use condition::Tri;
pub(crate) use condition::{compare_numbers, eval as eval_condition, eval_pred, Facts};
pub use decision::{Decision, Reason, Source, Verdict};
pub use request::Request;

use crate::fingerprint::ToolApproval;
use crate::policy::{
    names::{fold_name, Folded},
    target_index::in_file_order,
    DefaultDecision, Hits, Policy, Rule,
};
use crate::syntax::{Effect, TargetKind};

/// A request's names as each kind of list matches them: folded once.
pub(crate) struct Names<'r> {
    pub server: &'r str,
    pub name: &'r str,
    pub folded_server: Folded<'r>,
    pub folded_name: Folded<'r>,
}

impl<'r> Names<'r> {
    /// `name` is the request's name as matched: for a resource, its
    /// normalized URI.
    pub fn new(server: &'r str, name: &'r str) -> Self {
        Names {
            server,
            name,
            folded_server: fold_name(server),
            folded_name: fold_name(name),
        }
    }
}

/// Why a request is refused before any rule sees it.
pub(crate) enum Refused {
    /// A server id with `/` in it.
    Server,
    /// A resource URI that cannot be normalized.
    Uri(crate::uri::UriError),
}

impl Refused {
    pub fn decision(&self) -> Decision {
        let reason = match self {
            Refused::Server => Reason::BadServer,
            Refused::Uri(_) => Reason::BadUri,
        };
        Decision::new(Verdict::Deny, Source::Request, reason)
    }
}

/// Whether a server id can name a server: never with `/` in it.
pub(crate) fn check_server(server: &str) -> Result<(), Refused> {
    if server.contains('/') {
        Err(Refused::Server)
    } else {
        Ok(())
    }
}

/// The name rules match: a resource's URI normalized (RFC 3986 section 6),
/// any other name as it is.
pub(crate) fn matched_name<'a>(request: &Request<'a>) -> Result<Cow<'a, str>, Refused> {
    match request.kind {
        TargetKind::Resource => crate::uri::normalize(request.name).map_err(Refused::Uri),
        _ => Ok(Cow::Borrowed(request.name)),
    }
}

/// How a rule's condition came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    Yes,
    /// A predicate failed: a match for deny and ask rules.
    Failed,
}

fn condition_of(rule: &Rule, facts: &Facts<'_>) -> Tri {
    match &rule.condition {
        None => Tri::True,
        Some(c) => eval_condition(c, facts),
    }
}

/// The first rule of a deny or ask list (loose targets) that matches.
fn first_loose<'p>(
    policy: &'p Policy,
    effect: Effect,
    kind: TargetKind,
    names: &Names<'_>,
    facts: &Facts<'_>,
) -> Option<(&'p Rule, Match)> {
    let list = policy.list(effect);
    let mut hits = Hits::new();
    list.index(kind).collect(
        &names.folded_server,
        &names.folded_name,
        names.name,
        &mut hits,
    );
    in_file_order(&mut hits);
    hits.iter().find_map(|&i| {
        let rule = list.rules.get(i as usize)?;
        match condition_of(rule, facts) {
            Tri::True => Some((rule, Match::Yes)),
            Tri::Failed => Some((rule, Match::Failed)),
            Tri::False => None,
        }
    })
}

/// The first allow rule (exact targets) that matches. For a new tool only
/// targets with both segments literal count.
fn first_allow<'p>(
    policy: &'p Policy,
    kind: TargetKind,
    names: &Names<'_>,
    facts: &Facts<'_>,
    exact_only: bool,
) -> Option<&'p Rule> {
    let list = policy.list(Effect::Allow);
    let mut hits = Hits::new();
    let index = list.index(kind);
    if exact_only {
        index.collect_exact(names.server, names.name, &mut hits);
    } else {
        index.collect(names.server, names.name, names.name, &mut hits);
    }
    in_file_order(&mut hits);
    hits.iter().find_map(|&i| {
        let rule = list.rules.get(i as usize)?;
        (condition_of(rule, facts) == Tri::True).then_some(rule)
    })
}

fn by_rule(verdict: Verdict, source: Source, reason: Reason, rule: &Rule) -> Decision {
    Decision {
        decision: verdict,
        source,
        reason,
        rule_id: Some(Arc::clone(&rule.id)),
        rule_span: Some(rule.span),
    }
}

/// Whether the request's server's annotations are believed.
pub(crate) fn trusts(policy: &Policy, request: &Request<'_>) -> bool {
    request.kind == TargetKind::Tool
        && (request.server_trusted || policy.settings.trusted.contains(request.server))
}

/// Decides one request against one policy.
pub fn decide(policy: &Policy, request: &Request<'_>) -> Decision {
    let decision = decide_quietly(policy, request);
    tracing::debug!(
        target: "mcppol::decision",
        policy = %policy.name,
        kind = request.kind.as_str(),
        server = request.server,
        name = request.name,
        decision = decision.decision.as_str(),
        source = decision.source.as_str(),
        reason = decision.reason.as_str(),
        rule_id = decision.rule_id.as_deref(),
    );
    decision
}

fn decide_quietly(policy: &Policy, request: &Request<'_>) -> Decision {
    let settings = &policy.settings;
    let kind = request.kind;
    let in_scope = match kind {
        TargetKind::Tool => true,
        TargetKind::Resource => settings.scope.resources,
        TargetKind::Prompt => settings.scope.prompts,
    };
    if let Err(refused) = check_server(request.server) {
        return refused.decision();
    }
    if !in_scope {
        return Decision::new(Verdict::Allow, Source::Default, Reason::OutOfScope);
    }
    let name = match matched_name(request) {
        Ok(name) => name,
        Err(refused) => return refused.decision(),
    };
    let names = Names::new(request.server, &name);
    if kind == TargetKind::Tool
        && !policy.is_visible_folded(
            names.server,
            names.name,
            &names.folded_server,
            &names.folded_name,
        )
    {
        return Decision::new(Verdict::Deny, Source::Visibility, Reason::Hidden);
    }
    let approver = request.approver_available();
    let facts = Facts::new(request, trusts(policy, request), policy.uses_annotations);

    if let Some((rule, m)) = first_loose(policy, Effect::Deny, kind, &names, &facts) {
        let reason = match m {
            Match::Yes => Reason::DenyRule,
            Match::Failed => Reason::PredicateFailed,
        };
        return by_rule(Verdict::Deny, Source::Deny, reason, rule);
    }
    if kind == TargetKind::Tool && settings.pin_tools && request.approval == ToolApproval::Changed {
        let verdict = if approver {
            Verdict::Ask
        } else {
            Verdict::Deny
        };
        return Decision::new(verdict, Source::Pin, Reason::DefinitionChanged);
    }
    if let Some((rule, m)) = first_loose(policy, Effect::Ask, kind, &names, &facts) {
        return match (approver, m) {
            (false, _) => by_rule(Verdict::Deny, Source::Ask, Reason::NoApprover, rule),
            (true, Match::Yes) => by_rule(Verdict::Ask, Source::Ask, Reason::AskRule, rule),
            (true, Match::Failed) => {
                by_rule(Verdict::Ask, Source::Ask, Reason::PredicateFailed, rule)
            }
        };
    }
    let exact_only = kind == TargetKind::Tool
        && request.approval == ToolApproval::New
        && !settings.allow_new_tools;
    if let Some(rule) = first_allow(policy, kind, &names, &facts, exact_only) {
        return by_rule(Verdict::Allow, Source::Allow, Reason::AllowRule, rule);
    }
    let verdict = match settings.default {
        DefaultDecision::Ask if approver => Verdict::Ask,
        _ => Verdict::Deny,
    };
    Decision::new(verdict, Source::Default, Reason::NoRule)
}
