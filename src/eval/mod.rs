//! Request to decision: the fixed precedence of the contract,
//! `visibility > deny > pin > ask > allow > default`.

mod condition;
pub mod explain;
#[cfg(feature = "cli")]
pub(crate) mod outcomes;
#[cfg(feature = "cli")]
pub mod owned;
pub(crate) mod shell;
pub(crate) mod sink;

use std::borrow::Cow;

pub use crate::model::{Decision, Reason, Request, Source, Verdict};
pub use condition::Tri;
pub(crate) use condition::{eval as eval_condition, Facts, MAX_LIST_NESTING};

use crate::fingerprint::ToolApproval;
use crate::policy::{
    hits_of, names::Names, Cand, Cands, DefaultDecision, Hits, List, Policy, Query, Rule,
};
use crate::syntax::{Effect, TargetKind};
use sink::{RuleSeen, Sink};

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
    // A plain loop: server ids are short, and `contains` calls `memchr`.
    if server.bytes().any(|b| b == b'/') {
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

fn condition_of<S: Sink>(rule: &Rule, facts: &Facts<'_>, sink: &mut S) -> Tri {
    if S::ON {
        if let Some(assumed) = sink.assumed(rule, facts) {
            return assumed;
        }
    }
    match &rule.condition {
        None => Tri::True,
        Some(c) => eval_condition(c, facts, sink),
    }
}

/// Tells the sink about the rules of `rules` of this kind that the index
/// did not offer: no target of theirs names the request (or, for a new
/// tool, `skipped` says none does exactly).
fn passed_over<S: Sink>(
    rules: Option<&[Rule]>,
    kind: TargetKind,
    sink: &mut S,
    skipped: impl Fn(u32) -> bool,
    first: usize,
) {
    for (i, rule) in rules.unwrap_or_default().iter().enumerate() {
        if rule.kind == kind {
            let number = u32::try_from(first + i).unwrap_or(u32::MAX);
            let seen = if skipped(number) {
                RuleSeen::SkippedNew
            } else {
                RuleSeen::NoTarget
            };
            sink.rule(rule, seen);
        }
    }
}

/// The first rule of a deny or ask list (loose targets) that matches;
/// `cands` are the request's candidates of every list, in file order.
fn first_loose<'p, S: Sink>(
    policy: &'p Policy,
    effect: Effect,
    kind: TargetKind,
    cands: &[Cand],
    facts: &Facts<'_>,
    sink: &mut S,
) -> Option<(&'p Rule, Match)> {
    let list = policy.list(effect);
    let which = List::from(effect);
    let mut next = 0;
    let mut last = None;
    for c in cands.iter().filter(|c| c.list() == which) {
        let i = c.number();
        if last == Some(i) {
            continue;
        }
        last = Some(i);
        let Some(rule) = list.rules.get(i as usize) else {
            continue;
        };
        if S::ON {
            passed_over(
                list.rules.get(next..i as usize),
                kind,
                sink,
                |_| false,
                next,
            );
            next = i as usize + 1;
        }
        let result = condition_of(rule, facts, sink);
        sink.rule(rule, RuleSeen::Condition(result));
        match result {
            Tri::True => return Some((rule, Match::Yes)),
            Tri::Failed => return Some((rule, Match::Failed)),
            Tri::False => {}
        }
    }
    if S::ON {
        passed_over(list.rules.get(next..), kind, sink, |_| false, next);
    }
    None
}

/// The first allow rule (exact targets) that matches. For a new tool only
/// targets with both segments literal count.
#[allow(clippy::too_many_arguments)]
fn first_allow<'p, S: Sink>(
    policy: &'p Policy,
    kind: TargetKind,
    cands: &[Cand],
    query: &Query<'_>,
    facts: &Facts<'_>,
    exact_only: bool,
    sink: &mut S,
) -> Option<&'p Rule> {
    let list = policy.list(Effect::Allow);
    let which = List::Allow;
    let index = policy.index(kind);
    // For an observer: the rules a target names at all, so that a rule
    // left out for a new tool reads as skipped, not as not named.
    let mut named = Hits::new();
    if S::ON && exact_only {
        named = hits_of(cands, which, |c| index.admits(c, query, false));
    }
    let skipped = |i: u32| named.contains(&i);
    let mut next = 0;
    let mut last = None;
    for &c in cands.iter().filter(|c| c.list() == which) {
        let i = c.number();
        // A rule with several targets has an entry for each: it is tried
        // once, if any of them matches.
        if last == Some(i) || !index.admits(c, query, exact_only) {
            continue;
        }
        last = Some(i);
        let Some(rule) = list.rules.get(i as usize) else {
            continue;
        };
        if S::ON {
            passed_over(list.rules.get(next..i as usize), kind, sink, skipped, next);
            next = i as usize + 1;
        }
        let result = condition_of(rule, facts, sink);
        sink.rule(rule, RuleSeen::Condition(result));
        if result == Tri::True {
            return Some(rule);
        }
    }
    if S::ON {
        passed_over(list.rules.get(next..), kind, sink, skipped, next);
    }
    None
}

impl Decision {
    /// Names the policy that decided, and the line of the deciding rule.
    pub(crate) fn made_by(mut self, policy: &Policy) -> Self {
        self.policy = Some(policy.shared_name.clone());
        if self.line.is_none() {
            self.line = self
                .rule_span
                .map(|span| u32::try_from(policy.source.line_of(span.start)).unwrap_or(u32::MAX));
        }
        self
    }
}

fn by_rule(verdict: Verdict, source: Source, reason: Reason, rule: &Rule) -> Decision {
    Decision {
        decision: verdict,
        source,
        reason,
        rule_id: Some(rule.id.clone()),
        policy: None,
        line: Some(rule.line),
        rule_span: Some(rule.span),
    }
}

/// Whether the annotations of the request's server are believed: only for
/// a tool call, when the host trusts the server or the policy's `trusted`
/// setting names it exactly as sent (or is `trusted all`). The one place
/// trust is decided: conditions, `explain` and the pipeline all ask here
/// (the checker's `untrusted_annotation` lint reads the setting itself,
/// at load, with no request).
pub(crate) fn trusts(policy: &Policy, request: &Request<'_>) -> bool {
    request.kind == TargetKind::Tool
        && (request.server_trusted || policy.trusted.contains(request.server))
}

/// Decides one request against one policy.
pub fn decide(policy: &Policy, request: &Request<'_>) -> Decision {
    let decision = run(policy, request, &mut ()).made_by(policy);
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

/// The decision procedure, telling `sink` what it sees. [`decide`] passes
/// `()`; `explain` a recorder: one procedure, so the two always agree.
pub(crate) fn run<S: Sink>(policy: &Policy, request: &Request<'_>, sink: &mut S) -> Decision {
    let settings = &policy.settings;
    let kind = request.kind;
    let in_scope = match kind {
        TargetKind::Tool => true,
        TargetKind::Resource => settings.scope.resources,
        TargetKind::Prompt => settings.scope.prompts,
    };
    if let Err(refused) = check_server(request.server) {
        sink.refused(policy, request, &refused);
        return refused.decision();
    }
    if !in_scope {
        sink.out_of_scope(policy, request);
        return Decision::new(Verdict::Allow, Source::Default, Reason::OutOfScope);
    }
    let name = match matched_name(request) {
        Ok(name) => name,
        Err(refused) => {
            sink.refused(policy, request, &refused);
            return refused.decision();
        }
    };
    if kind == TargetKind::Resource {
        sink.normalized(policy, request, &name);
    }
    let mut bufs = [[0; 64]; 2];
    let names = Names::new(request.server, &name, &mut bufs);
    let query = names.query();
    if kind == TargetKind::Tool {
        let mut hits = Hits::new();
        let shown = policy.visibility_folded(&query, &mut hits);
        sink.visibility(policy, request, shown, &hits);
        if !shown.visible() {
            return Decision::new(Verdict::Deny, Source::Visibility, Reason::Hidden);
        }
    }
    let approver = request.approver_available();
    // Every candidate rule of the three lists, in file order: one search.
    let mut cands = Cands::new();
    policy.index(kind).candidates(&query, &mut cands);
    let facts = Facts::new(request, policy).with_resolve_links(settings.resolve_links);

    if let Some((rule, m)) = first_loose(policy, Effect::Deny, kind, &cands, &facts, sink) {
        let reason = match m {
            Match::Yes => Reason::DenyRule,
            Match::Failed => Reason::PredicateFailed,
        };
        return by_rule(Verdict::Deny, Source::Deny, reason, rule);
    }
    // The pin only tightens: a changed tool is asked about (or denied,
    // without an approver) only where a later stage would ask or allow; a
    // call that only `default deny` decides stays denied by the default.
    let pinned =
        kind == TargetKind::Tool && settings.pin_tools && request.approval == ToolApproval::Changed;
    if kind == TargetKind::Tool && !pinned {
        sink.pin(policy, request.approval, approver, false);
    }
    let pin = |sink: &mut S| {
        sink.pin(policy, request.approval, approver, true);
        let verdict = if approver {
            Verdict::Ask
        } else {
            Verdict::Deny
        };
        Decision::new(verdict, Source::Pin, Reason::DefinitionChanged)
    };
    if let Some((rule, m)) = first_loose(policy, Effect::Ask, kind, &cands, &facts, sink) {
        if pinned {
            return pin(sink);
        }
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
    if let Some(rule) = first_allow(policy, kind, &cands, &query, &facts, exact_only, sink) {
        if pinned {
            return pin(sink);
        }
        return by_rule(Verdict::Allow, Source::Allow, Reason::AllowRule, rule);
    }
    if pinned && settings.default == DefaultDecision::Ask {
        return pin(sink);
    }
    if pinned {
        sink.pin(policy, request.approval, approver, false);
    }
    let verdict = match settings.default {
        DefaultDecision::Ask if approver => Verdict::Ask,
        _ => Verdict::Deny,
    };
    sink.default(policy, verdict);
    Decision::new(verdict, Source::Default, Reason::NoRule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::names::fold;
    use crate::PolicySet;

    /// Trust is the host's, or the policy's `trusted` setting exactly as
    /// written: ids that fold alike but differ are not trusted, a trusted
    /// server with no rule is; never for a resource or a prompt.
    #[test]
    fn trust_is_the_hosts_or_the_setting_as_written() {
        let set = PolicySet::from_text(
            "p.mcppol",
            r#"policy p { trusted "GitHub", "fs", "no-rules", "*"
                allow "github/x", "fs/*", "*/y"
                deny "Git*/z" }
            policy q { allow "a/b" }
            policy r { trusted all
                allow "a/b" }"#,
        )
        .unwrap();
        let servers = [
            "GitHub", "github", "GITHUB", "fs", "FS", "no-rules", "no_rules", "*", "other", "",
        ];
        let trusted_by_setting = |policy: &str, server: &str| match policy {
            "p" => ["GitHub", "fs", "no-rules", "*"].contains(&server),
            "r" => true,
            _ => false,
        };
        let mut checked = 0;
        for policy in set.iter() {
            for kind in TargetKind::ALL {
                for server in servers {
                    for host in [false, true] {
                        let mut request = Request::tool(server, "x");
                        request.kind = kind;
                        request.server_trusted = host;
                        let want = kind == TargetKind::Tool
                            && (host || trusted_by_setting(&policy.name, server));
                        let what = format!("{} {kind:?} {server} {host}", policy.name);
                        assert_eq!(trusts(policy, &request), want, "{what}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 3 * 3 * servers.len() * 2);
    }

    /// The index offers exactly the rules a target of which names the
    /// request (each target's own matcher), and for a new tool exactly
    /// those with an exact target: what `explain` reports as not matching
    /// or skipped is what deciding skips.
    #[test]
    fn the_index_offers_exactly_the_rules_a_target_names() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = Vec::new();
        for file in [
            "policies/filesystem.mcppol",
            "policies/github.mcppol",
            "policies/mail.mcppol",
            "policies/strict.mcppol",
            "tests/fixtures/ok/language_example.mcppol",
        ] {
            texts.push(std::fs::read_to_string(dir.join(file)).unwrap());
        }
        texts.push(
            r#"policy p { scope tools, resources, prompts
                deny "a" ~ /^x/, "*/X-y", "?/x"
                ask "git*/get_*", *, "x"
                allow "a/x", "a/*", "b/x_y"
                allow resource "docs/file:///r/*", "*/file:///etc/passwd"
                deny prompt "docs/sum*", "x" }"#
                .to_string(),
        );
        let servers = ["a", "b", "c", "fs", "github", "git", "mail", "docs", "web"];
        let names = [
            "x",
            "X-y",
            "x_y",
            "y",
            "get_user",
            "Get-User",
            "delete_repository",
            "read_text_file",
            "write_file",
            "send_message",
            "file:///r/a",
            "file:///etc/passwd",
            "summary",
            "xylophone",
        ];
        let mut checked = 0;
        for text in &texts {
            let set = PolicySet::from_text("p.mcppol", text).unwrap();
            for policy in set.iter() {
                for effect in [Effect::Deny, Effect::Ask, Effect::Allow] {
                    let list = policy.list(effect);
                    let loose = effect != Effect::Allow;
                    for kind in TargetKind::ALL {
                        for server in servers {
                            for name in names {
                                let (fs, fname) = (fold(server), fold(name));
                                let mut bufs = [[0; 64]; 2];
                                let names = Names::new(server, name, &mut bufs);
                                let query = names.query();
                                let index = policy.index(kind);
                                let mut cands = Cands::new();
                                index.candidates(&query, &mut cands);
                                let hits = hits_of(&cands, List::from(effect), |c| {
                                    index.admits(c, &query, false)
                                });
                                let named: Vec<u32> = (0..list.rules.len() as u32)
                                    .filter(|&i| {
                                        let rule = &list.rules[i as usize];
                                        rule.kind == kind
                                            && rule.targets.iter().any(|t| {
                                                if loose {
                                                    t.matches(&fs, &fname, name)
                                                } else {
                                                    t.matches(server, name, name)
                                                }
                                            })
                                    })
                                    .collect();
                                assert_eq!(
                                    hits.to_vec(),
                                    named,
                                    "{effect:?} {kind:?} {server}/{name}"
                                );
                                if !loose {
                                    let exact = hits_of(&cands, List::from(effect), |c| {
                                        index.admits(c, &query, true)
                                    });
                                    let want: Vec<u32> = named
                                        .iter()
                                        .copied()
                                        .filter(|&i| {
                                            list.rules[i as usize]
                                                .targets
                                                .iter()
                                                .any(|t| t.exact && t.matches(server, name, name))
                                        })
                                        .collect();
                                    assert_eq!(exact.to_vec(), want, "{kind:?} {server}/{name}");
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }
}
