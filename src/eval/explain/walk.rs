//! The walk over the decision procedure's stages, rule by rule, in file
//! order, keeping a step for each.

use std::sync::Arc;

use crate::eval::{
    by_rule, check_server, matched_name, trusts, Decision, Facts, Names, Reason, Refused, Request,
    Source, Tri, Verdict,
};
use crate::fingerprint::ToolApproval;
use crate::policy::{DefaultDecision, Policy, Rule};
use crate::syntax::{Effect, Span, TargetKind};

use super::settings::SettingSpans;
use super::trace::{ExplainStep, Note, Outcome, Stage};

pub(super) struct Walk<'a, 'r> {
    pub(super) policy: &'a Policy,
    pub(super) request: &'a Request<'r>,
    pub(super) settings_ast: &'a SettingSpans,
    /// The name as rules match it: a resource's normalized URI.
    pub(super) name: String,
    pub(super) steps: Vec<ExplainStep>,
}

/// How one rule came out against the request.
enum RuleResult {
    Match(Tri),
    NoTarget,
    ConditionFalse,
    SkippedNew,
}

impl<'a, 'r> Walk<'a, 'r> {
    fn step(&mut self, stage: Stage, span: Span, outcome: Outcome, detail: String) {
        self.steps.push(ExplainStep {
            stage,
            rule_id: None,
            span,
            outcome,
            detail,
            notes: Vec::new(),
        });
    }

    fn request_text(&self) -> String {
        format!(
            "{} `{}/{}`",
            self.request.kind.as_str(),
            self.request.server,
            self.name
        )
    }

    pub(super) fn run(&mut self) -> Decision {
        let policy = self.policy;
        let request = self.request;
        let settings = &policy.settings;
        let kind = request.kind;
        let name_span = policy.name_span;
        let in_scope = match kind {
            TargetKind::Tool => true,
            TargetKind::Resource => settings.scope.resources,
            TargetKind::Prompt => settings.scope.prompts,
        };
        let scope_span = self.settings_ast.scope.unwrap_or(name_span);
        if let Err(refused) = check_server(request.server) {
            self.step(
                Stage::Request,
                name_span,
                Outcome::Decided,
                format!(
                    "the server id `{}` holds `/`, so `server/tool` would split two ways: the request is refused",
                    request.server
                ),
            );
            return refused.decision();
        }
        if !in_scope {
            self.step(
                Stage::Scope,
                scope_span,
                Outcome::Decided,
                format!(
                    "the policy's scope does not include {}s: the {} is not governed",
                    kind.as_str(),
                    self.request_text()
                ),
            );
            return Decision::new(Verdict::Allow, Source::Default, Reason::OutOfScope);
        }
        match matched_name(request) {
            Err(refused) => {
                let why = match &refused {
                    Refused::Uri(e) => e.to_string(),
                    Refused::Server => String::new(),
                };
                self.step(
                    Stage::Request,
                    name_span,
                    Outcome::Decided,
                    format!(
                        "the URI `{}` cannot be normalized ({why}): the read is refused before any rule",
                        request.name
                    ),
                );
                return refused.decision();
            }
            Ok(name) if kind == TargetKind::Resource => {
                let detail = if name == request.name {
                    format!("the URI `{name}` is already normal (RFC 3986 section 6)")
                } else {
                    format!(
                        "the URI `{}` is matched as `{name}` (normalized: RFC 3986 section 6, dot segments removed)",
                        request.name
                    )
                };
                self.name = name.into_owned();
                self.step(Stage::Request, name_span, Outcome::Passed, detail);
            }
            Ok(_) => {}
        }
        if kind == TargetKind::Tool {
            let vis_span = policy.visibility.as_ref().map_or(name_span, |v| v.span);
            let shown = policy.is_visible(request.server, request.name);
            let pats = &self.settings_ast.visibility;
            let excluded = pats
                .iter()
                .find(|p| !p.include && p.matches(request.server, request.name));
            let included = pats
                .iter()
                .find(|p| p.include && p.matches(request.server, request.name));
            let tool = format!("`{}/{}`", request.server, request.name);
            match (&policy.visibility, shown) {
                (None, _) => self.step(
                    Stage::Visibility,
                    name_span,
                    Outcome::Passed,
                    "no `tools {}` block: every tool is visible".into(),
                ),
                (Some(_), true) => {
                    let (span, detail) = match included {
                        Some(p) => (p.span, format!("{tool} is shown: included by {} (exact)", p.text)),
                        None => (
                            vis_span,
                            format!("{tool} is shown: no exclude pattern matches it and the include list is empty"),
                        ),
                    };
                    self.step(Stage::Visibility, span, Outcome::Passed, detail);
                }
                (Some(_), false) => {
                    let (span, detail) = match excluded {
                        Some(p) => (
                            p.span,
                            format!("{tool} is hidden: excluded by {} (matched loosely); it is denied before any rule", p.text),
                        ),
                        None => (
                            vis_span,
                            format!("{tool} is hidden: no include pattern names it (include matches exactly); it is denied before any rule"),
                        ),
                    };
                    self.step(Stage::Visibility, span, Outcome::Decided, detail);
                    return Decision::new(Verdict::Deny, Source::Visibility, Reason::Hidden);
                }
            }
        }
        let approver = request.approver_available();
        let matched = self.name.clone();
        let names = Names::new(request.server, &matched);
        let facts = Facts::new(request, trusts(policy, request), true);

        if let Some((rule, t)) = self.first(Effect::Deny, &names, &facts, false) {
            let reason = if t == Tri::Failed {
                Reason::PredicateFailed
            } else {
                Reason::DenyRule
            };
            return by_rule(Verdict::Deny, Source::Deny, reason, rule);
        }
        if kind == TargetKind::Tool {
            let pin_span = self.settings_ast.pin_tools.unwrap_or(name_span);
            let (outcome, detail) = match (settings.pin_tools, request.approval) {
                (false, _) => (Outcome::Passed, "pin_tools is off".to_string()),
                (true, ToolApproval::Approved) => (
                    Outcome::Passed,
                    "the tool's definition is the approved one (or no approved fingerprints were given)".to_string(),
                ),
                (true, ToolApproval::New) => (
                    Outcome::Passed,
                    "the tool has no approved fingerprint: it is new".to_string(),
                ),
                (true, ToolApproval::Changed) => (
                    Outcome::Decided,
                    format!(
                        "the tool's definition differs from its approved fingerprint: {}",
                        if approver {
                            "a person is asked"
                        } else {
                            "no approver, so it is denied"
                        }
                    ),
                ),
            };
            self.step(Stage::Pin, pin_span, outcome, detail);
            if outcome == Outcome::Decided {
                let verdict = if approver {
                    Verdict::Ask
                } else {
                    Verdict::Deny
                };
                return Decision::new(verdict, Source::Pin, Reason::DefinitionChanged);
            }
        }
        if let Some((rule, t)) = self.first(Effect::Ask, &names, &facts, false) {
            return match (approver, t) {
                (false, _) => by_rule(Verdict::Deny, Source::Ask, Reason::NoApprover, rule),
                (true, Tri::Failed) => {
                    by_rule(Verdict::Ask, Source::Ask, Reason::PredicateFailed, rule)
                }
                (true, _) => by_rule(Verdict::Ask, Source::Ask, Reason::AskRule, rule),
            };
        }
        let exact_only = kind == TargetKind::Tool
            && request.approval == ToolApproval::New
            && !settings.allow_new_tools;
        if let Some((rule, _)) = self.first(Effect::Allow, &names, &facts, exact_only) {
            return by_rule(Verdict::Allow, Source::Allow, Reason::AllowRule, rule);
        }
        let verdict = match settings.default {
            DefaultDecision::Ask if approver => Verdict::Ask,
            _ => Verdict::Deny,
        };
        let default_word = match settings.default {
            DefaultDecision::Ask => "ask",
            DefaultDecision::Deny => "deny",
        };
        let why = match (settings.default, verdict) {
            (DefaultDecision::Ask, Verdict::Deny) => {
                " (no approver: an `ask` default denies)".to_string()
            }
            _ => String::new(),
        };
        let span = self.settings_ast.default.unwrap_or(name_span);
        self.step(
            Stage::Default,
            span,
            Outcome::Decided,
            format!("no rule decided: the default is `{default_word}`{why}"),
        );
        Decision::new(verdict, Source::Default, Reason::NoRule)
    }

    /// Tries the rules of one list in file order; records a step for each
    /// and returns the first that matches (with its condition's value).
    fn first(
        &mut self,
        effect: Effect,
        names: &Names<'_>,
        facts: &Facts<'_>,
        exact_only: bool,
    ) -> Option<(&'a Rule, Tri)> {
        let stage = match effect {
            Effect::Deny => Stage::Deny,
            Effect::Ask => Stage::Ask,
            Effect::Allow => Stage::Allow,
        };
        let policy = self.policy;
        for rule in policy.rules(effect) {
            if rule.kind != self.request.kind {
                continue;
            }
            let (result, notes) = self.try_rule(rule, names, facts, exact_only);
            let (outcome, detail, found) = self.describe_rule(rule, &result);
            self.steps.push(ExplainStep {
                stage,
                rule_id: Some(Arc::clone(&rule.id)),
                span: rule.span,
                outcome,
                detail,
                notes,
            });
            if let Some(t) = found {
                return Some((rule, t));
            }
        }
        None
    }

    fn try_rule(
        &self,
        rule: &Rule,
        names: &Names<'_>,
        facts: &Facts<'_>,
        exact_only: bool,
    ) -> (RuleResult, Vec<Note>) {
        let loose = rule.effect != Effect::Allow;
        let matching: Vec<bool> = rule
            .targets
            .iter()
            .filter(|t| {
                if loose {
                    t.matches(&names.folded_server, &names.folded_name, names.name)
                } else {
                    t.matches(names.server, names.name, names.name)
                }
            })
            .map(|t| t.exact)
            .collect();
        if matching.is_empty() {
            return (RuleResult::NoTarget, Vec::new());
        }
        if exact_only && !matching.iter().any(|exact| *exact) {
            return (RuleResult::SkippedNew, Vec::new());
        }
        let Some(cond) = &rule.condition else {
            return (RuleResult::Match(Tri::True), Vec::new());
        };
        let (value, notes) = self.explain_cond(cond, facts);
        let result = match (value, loose) {
            (Tri::True, _) => RuleResult::Match(Tri::True),
            (Tri::Failed, true) => RuleResult::Match(Tri::Failed),
            (Tri::Failed, false) | (Tri::False, _) => RuleResult::ConditionFalse,
        };
        (result, notes)
    }

    fn describe_rule(&self, rule: &Rule, result: &RuleResult) -> (Outcome, String, Option<Tri>) {
        let req = self.request_text();
        let targets = rule
            .targets
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let loose = rule.effect != Effect::Allow;
        match result {
            RuleResult::NoTarget => (
                Outcome::TargetNoMatch,
                format!(
                    "no target matches {req}: {targets}{}",
                    if loose { " (matched loosely)" } else { " (matched exactly)" }
                ),
                None,
            ),
            RuleResult::SkippedNew => (
                Outcome::SkippedNewTool,
                format!(
                    "skipped: the tool is new (no approved fingerprint), `allow_new_tools` is off, and no matching target is exact (`\"server/tool\"` with no `*` or `?`): {targets}"
                ),
                None,
            ),
            RuleResult::ConditionFalse => {
                let failed_in_allow = !loose;
                (
                    Outcome::ConditionFalse,
                    if failed_in_allow {
                        "target matches; the condition does not hold (a failed predicate never allows)".to_string()
                    } else {
                        "target matches; the condition does not hold".to_string()
                    },
                    None,
                )
            }
            RuleResult::Match(Tri::Failed) => (
                Outcome::PredicateFailed,
                format!(
                    "target matches; a predicate failed, which counts as a match in {} rule",
                    if rule.effect == Effect::Ask { "an ask" } else { "a deny" }
                ),
                Some(Tri::Failed),
            ),
            RuleResult::Match(_) => (
                Outcome::Matched,
                if rule.condition.is_some() {
                    "target matches and the condition holds".to_string()
                } else {
                    "target matches (no condition)".to_string()
                },
                Some(Tri::True),
            ),
        }
    }
}
