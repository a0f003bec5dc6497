//! Why a request gets its decision: every rule the decision procedure
//! considers, in its order (scope, visibility, deny, pin, ask, allow,
//! default), which matched and which did not and why, ending with the
//! decision.
//!
//! This walks the rules itself, in file order, with each target's own
//! matcher; [`super::decide`] uses the target indexes and keeps no trace, so
//! explaining costs the hot path nothing. Tests check that both always
//! agree.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{eval_pred, trusts, Decision, Facts, Names, Reason, Request, Source, Tri, Verdict};
use crate::fingerprint::ToolApproval;
use crate::paths;
use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::{
    AnnotationKey, Cond, DefaultDecision, Operand, Policy, Pred, Rule, Step as SelStep, Test,
    Trusted,
};
use crate::syntax::{self, Effect, Item, Span, TargetKind};

/// A stage of the decision procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Scope,
    Visibility,
    Deny,
    Pin,
    Ask,
    Allow,
    Default,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Scope => "scope",
            Stage::Visibility => "visibility",
            Stage::Deny => "deny",
            Stage::Pin => "pin",
            Stage::Ask => "ask",
            Stage::Allow => "allow",
            Stage::Default => "default",
        }
    }
}

/// How one step came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The rule matched and decided.
    Matched,
    /// A predicate failed; in a deny or ask rule that is a match.
    PredicateFailed,
    /// No target of the rule names the request.
    TargetNoMatch,
    /// A target matched, the condition did not hold.
    ConditionFalse,
    /// An allow rule whose matching targets are not exact, for a new tool.
    SkippedNewTool,
    /// A stage that let the request through to the next one.
    Passed,
    /// A stage without a rule that decided (visibility, pin, default, scope).
    Decided,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::PredicateFailed => "predicate_failed",
            Outcome::TargetNoMatch => "target_no_match",
            Outcome::ConditionFalse => "condition_false",
            Outcome::SkippedNewTool => "skipped_new_tool",
            Outcome::Passed => "passed",
            Outcome::Decided => "decided",
        }
    }
}

/// One predicate of a condition and what it saw.
#[derive(Debug, Clone)]
pub struct Note {
    pub span: Span,
    /// The predicate as written.
    pub text: String,
    pub result: Tri,
    /// What it saw: "`args.path` is missing", "`args.cmd` is a number (42)".
    pub saw: String,
}

/// One line of an explanation.
#[derive(Debug, Clone)]
pub struct ExplainStep {
    pub stage: Stage,
    pub rule_id: Option<Arc<str>>,
    /// Where it is written: the rule, or the setting or block that decided.
    pub span: Span,
    pub outcome: Outcome,
    pub detail: String,
    /// The predicates that made the condition come out as it did.
    pub notes: Vec<Note>,
}

/// Every step, and the decision they lead to.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub policy: String,
    pub steps: Vec<ExplainStep>,
    /// Rules not considered because the decision was made before them.
    pub not_considered: usize,
    pub decision: Decision,
}

fn tri_str(t: Tri) -> &'static str {
    match t {
        Tri::True => "true",
        Tri::False => "false",
        Tri::Failed => "failed",
    }
}

fn tri_phrase(t: Tri) -> &'static str {
    match t {
        Tri::True => "is true",
        Tri::False => "is false",
        Tri::Failed => "failed",
    }
}

/// Explains one request. To explain many against one policy, build an
/// [`Explainer`] once.
pub fn explain(policy: &Policy, request: &Request<'_>) -> Explanation {
    Explainer::new(policy).explain(request)
}

/// Explains requests against one policy (finds where its settings are
/// written once).
pub struct Explainer<'p> {
    policy: &'p Policy,
    settings: SettingSpans,
}

impl<'p> Explainer<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Explainer {
            policy,
            settings: SettingSpans::of(policy),
        }
    }

    /// Explains one request.
    pub fn explain(&self, request: &Request<'_>) -> Explanation {
        let policy = self.policy;
        let mut ex = Walk {
            policy,
            request,
            settings_ast: &self.settings,
            steps: Vec::new(),
        };
        let decision = ex.run();
        let decided_at = ex.steps.last().map(|s| s.stage);
        let not_considered = count_not_considered(policy, request.kind, decided_at, &ex.steps);
        Explanation {
            policy: policy.name.clone(),
            steps: ex.steps,
            not_considered,
            decision,
        }
    }
}

fn count_not_considered(
    policy: &Policy,
    kind: TargetKind,
    decided_at: Option<Stage>,
    steps: &[ExplainStep],
) -> usize {
    let total = policy.all_rules().filter(|r| r.kind == kind).count();
    let seen = steps.iter().filter(|s| s.rule_id.is_some()).count();
    match decided_at {
        Some(_) => total.saturating_sub(seen),
        None => 0,
    }
}

/// Where the settings are written, for steps that no rule decides.
struct SettingSpans {
    /// The `tools {}` block's patterns: include (exact) or exclude (loose),
    /// as written, with a matcher each.
    visibility: Vec<VisPattern>,
    default: Option<Span>,
    pin_tools: Option<Span>,
    scope: Option<Span>,
    allow_new_tools: Option<Span>,
}

impl SettingSpans {
    fn of(policy: &Policy) -> Self {
        let mut spans = SettingSpans {
            visibility: Vec::new(),
            default: None,
            pin_tools: None,
            scope: None,
            allow_new_tools: None,
        };
        let (file, _) = syntax::parse(&policy.source);
        let Some(ast) = file
            .policies
            .iter()
            .find(|p| p.name.node == policy.name && p.name.span == policy.name_span)
        else {
            return spans;
        };
        for item in &ast.items {
            if let Item::Tools(block) = item {
                if spans.visibility.is_empty() {
                    for entry in &block.entries {
                        for target in &entry.targets {
                            if let Some(p) =
                                VisPattern::new(target, entry.include, &policy.source.text)
                            {
                                spans.visibility.push(p);
                            }
                        }
                    }
                }
            }
            if let Item::Setting(s) = item {
                let slot = match s.name.node.as_str() {
                    "default" => &mut spans.default,
                    "pin_tools" => &mut spans.pin_tools,
                    "scope" => &mut spans.scope,
                    "allow_new_tools" => &mut spans.allow_new_tools,
                    _ => continue,
                };
                *slot = Some(s.span);
            }
        }
        spans
    }
}

/// One pattern of the `tools {}` block.
struct VisPattern {
    include: bool,
    text: String,
    span: Span,
    server: Glob,
    name: Option<Glob>,
    regex: Option<regex::Regex>,
}

impl VisPattern {
    fn new(target: &syntax::TargetAst, include: bool, source: &str) -> Option<Self> {
        let span = target.span();
        let text = source.get(span.start..span.end)?.to_string();
        let prep = |s: &str| -> String {
            if include {
                s.to_string()
            } else {
                fold(s).into_owned()
            }
        };
        let (server, name, regex) = match target {
            syntax::TargetAst::Any(_) => (Glob::Any, Some(Glob::Any), None),
            syntax::TargetAst::Pattern(p) => match p.node.split_once('/') {
                Some((s, n)) => (Glob::new(&prep(s)), Some(Glob::new(&prep(n))), None),
                None => (Glob::Any, Some(Glob::new(&prep(&p.node))), None),
            },
            syntax::TargetAst::Regex { server, regex, .. } => (
                Glob::new(&prep(&server.node)),
                None,
                Some(regex::Regex::new(&regex.node).ok()?),
            ),
        };
        Some(VisPattern {
            include,
            text,
            span,
            server,
            name,
            regex,
        })
    }

    fn matches(&self, server: &str, name: &str) -> bool {
        let (s, n) = if self.include {
            (
                std::borrow::Cow::Borrowed(server),
                std::borrow::Cow::Borrowed(name),
            )
        } else {
            (fold(server), fold(name))
        };
        self.server.matches(&s)
            && match (&self.name, &self.regex) {
                (Some(g), _) => g.matches(&n),
                (None, Some(re)) => re.is_match(name) || re.is_match(&n),
                (None, None) => false,
            }
    }
}

struct Walk<'a, 'r> {
    policy: &'a Policy,
    request: &'a Request<'r>,
    settings_ast: &'a SettingSpans,
    steps: Vec<ExplainStep>,
}

fn rule_decision(verdict: Verdict, source: Source, reason: Reason, rule: &Rule) -> Decision {
    Decision {
        decision: verdict,
        source,
        reason,
        rule_id: Some(Arc::clone(&rule.id)),
        rule_span: Some(rule.span),
    }
}

fn plain(verdict: Verdict, source: Source, reason: Reason) -> Decision {
    Decision {
        decision: verdict,
        source,
        reason,
        rule_id: None,
        rule_span: None,
    }
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
            self.request.name
        )
    }

    fn run(&mut self) -> Decision {
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
            return plain(Verdict::Allow, Source::Default, Reason::OutOfScope);
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
                    return plain(Verdict::Deny, Source::Visibility, Reason::Hidden);
                }
            }
        }
        let approver = request.approver_available();
        let names = Names::new(request);
        let facts = Facts::new(request, trusts(policy, request), true);

        if let Some((rule, t)) = self.first(Effect::Deny, &names, &facts, false) {
            let reason = if t == Tri::Failed {
                Reason::PredicateFailed
            } else {
                Reason::DenyRule
            };
            return rule_decision(Verdict::Deny, Source::Deny, reason, rule);
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
                return plain(verdict, Source::Pin, Reason::DefinitionChanged);
            }
        }
        if let Some((rule, t)) = self.first(Effect::Ask, &names, &facts, false) {
            return match (approver, t) {
                (false, _) => rule_decision(Verdict::Deny, Source::Ask, Reason::NoApprover, rule),
                (true, Tri::Failed) => {
                    rule_decision(Verdict::Ask, Source::Ask, Reason::PredicateFailed, rule)
                }
                (true, _) => rule_decision(Verdict::Ask, Source::Ask, Reason::AskRule, rule),
            };
        }
        let exact_only = kind == TargetKind::Tool
            && request.approval == ToolApproval::New
            && !settings.allow_new_tools;
        if let Some((rule, _)) = self.first(Effect::Allow, &names, &facts, exact_only) {
            return rule_decision(Verdict::Allow, Source::Allow, Reason::AllowRule, rule);
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
        plain(verdict, Source::Default, Reason::NoRule)
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

    /// Evaluates a condition and keeps the predicates that made it come out
    /// as it did.
    fn explain_cond(&self, cond: &Cond, facts: &Facts<'_>) -> (Tri, Vec<Note>) {
        match cond {
            Cond::Pred(pred) => {
                let result = eval_pred(pred, facts);
                (result, vec![self.note(pred, result, facts)])
            }
            Cond::Not(inner) => {
                let (t, notes) = self.explain_cond(inner, facts);
                let t = match t {
                    Tri::True => Tri::False,
                    Tri::False => Tri::True,
                    Tri::Failed => Tri::Failed,
                };
                (t, notes)
            }
            Cond::And(parts) | Cond::Or(parts) => {
                let is_and = matches!(cond, Cond::And(_));
                let (short, other) = if is_and {
                    (Tri::False, Tri::True)
                } else {
                    (Tri::True, Tri::False)
                };
                let results: Vec<(Tri, Vec<Note>)> =
                    parts.iter().map(|p| self.explain_cond(p, facts)).collect();
                if let Some((_, notes)) = results.iter().find(|(t, _)| *t == short) {
                    return (short, notes.clone());
                }
                if results.iter().any(|(t, _)| *t == Tri::Failed) {
                    let notes = results
                        .into_iter()
                        .filter(|(t, _)| *t == Tri::Failed)
                        .flat_map(|(_, n)| n)
                        .collect();
                    return (Tri::Failed, notes);
                }
                (other, results.into_iter().flat_map(|(_, n)| n).collect())
            }
        }
    }

    fn note(&self, pred: &Pred, result: Tri, facts: &Facts<'_>) -> Note {
        let text = self
            .policy
            .source
            .text
            .get(pred.span.start..pred.span.end)
            .unwrap_or_default()
            .trim()
            .to_string();
        Note {
            span: pred.span,
            text,
            result,
            saw: self.saw(pred, facts),
        }
    }

    /// What a predicate saw, in words.
    fn saw(&self, pred: &Pred, facts: &Facts<'_>) -> String {
        let request = self.request;
        match &pred.test {
            Test::Annotation(key) => self.annotation_saw(*key, facts),
            Test::Tainted { ignore } => {
                let taint: Vec<&str> = request.taint.to_vec();
                if taint.is_empty() {
                    return "no taint given: the call is untainted".into();
                }
                let counted: Vec<&str> = taint
                    .iter()
                    .copied()
                    .filter(|t| *t != request.server && !ignore.iter().any(|i| &**i == *t))
                    .collect();
                format!(
                    "taint is [{}]; the tool's own server `{}`{} does not count; counted: [{}]",
                    taint.join(", "),
                    request.server,
                    if ignore.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " and the ignored [{}]",
                            ignore.iter().map(|s| &**s).collect::<Vec<_>>().join(", ")
                        )
                    },
                    counted.join(", ")
                )
            }
            Test::Host { name, predicate } => match predicate {
                None => format!("`host.{name}` is not registered: it fails closed"),
                Some(p) => match p.call(request) {
                    Ok(b) => format!("`host.{name}` returned {b}"),
                    Err(e) => format!("`host.{name}` failed ({e}): it fails closed"),
                },
            },
            Test::Exists(op) => self.operand_saw(op, facts, None),
            Test::Compare { operand, op, value } => {
                let need = match op {
                    syntax::CompareOp::Eq | syntax::CompareOp::Ne => None,
                    _ => Some(("a number", value.is_number())),
                };
                self.operand_saw(operand, facts, need.map(|(w, _)| w))
            }
            Test::In { operand, .. } => self.operand_saw(operand, facts, None),
            Test::Matches { operand, .. } => self.operand_saw(operand, facts, Some("a string")),
            Test::Inside { operand, root } | Test::Escapes { operand, root } => {
                let base = self.operand_saw(operand, facts, Some("a string"));
                let mut verdicts = Vec::new();
                let values = self.select(operand);
                let leaves = values.into_iter().flatten().flat_map(|v| match v {
                    Value::Array(items) => items.iter().collect::<Vec<_>>(),
                    other => vec![other],
                });
                for v in leaves {
                    verdicts.push(match v.as_str() {
                        Some(s) if paths::inside(s, root) => {
                            format!("{} is inside {root}", short(v))
                        }
                        Some(s) => match paths::canonicalize(s, root) {
                            Ok(c) => format!("{} is outside {root} (as `{c}`)", short(v)),
                            Err(e) => format!("{} is not a usable path ({e})", short(v)),
                        },
                        None => format!("{} is not a path", short(v)),
                    });
                }
                if verdicts.is_empty() {
                    base
                } else {
                    format!("{base}: {}", verdicts.join("; "))
                }
            }
        }
    }

    fn annotation_saw(&self, key: AnnotationKey, facts: &Facts<'_>) -> String {
        let value = facts.annotation(key);
        if !trusts(self.policy, self.request) {
            let why = match (&self.policy.settings.trusted, self.request.kind) {
                (_, k) if k != TargetKind::Tool => "only tools have annotations".to_string(),
                (Trusted::None, _) => format!(
                    "server `{}` is not trusted (no `trusted` setting)",
                    self.request.server
                ),
                _ => format!("server `{}` is not trusted", self.request.server),
            };
            return format!("{why}, so the conservative value {value} is used");
        }
        let hint = key.hint();
        match self.request.annotations.and_then(|a| a.get(hint)) {
            Some(Value::Bool(b)) => format!("the server is trusted and its `{hint}` is {b}"),
            Some(other) => format!(
                "the server is trusted; its `{hint}` is {}, not a boolean, so MCP's default {value} is used",
                short(other)
            ),
            None => format!("the server is trusted; its `{hint}` is absent, so MCP's default {value} is used"),
        }
    }

    /// The values an operand selects (`None` for a step that finds nothing).
    fn select(&self, operand: &Operand) -> Vec<Option<&'a Value>> {
        let mut out = Vec::new();
        match operand {
            Operand::Args(steps) => match self.request.args {
                Some(v) => collect(v, steps, &mut out),
                None => out.push(None),
            },
            Operand::Assigns(steps) => match self.request.assigns {
                Some(v) => collect(v, steps, &mut out),
                None => out.push(None),
            },
            Operand::Principal | Operand::Annotation(_) => {}
        }
        out
    }

    fn operand_saw(&self, operand: &Operand, facts: &Facts<'_>, need: Option<&str>) -> String {
        let (label, values) = match operand {
            Operand::Principal => {
                return match self.request.principal {
                    Some(p) => format!("`principal` is {}", short(&Value::String(p.into()))),
                    None => "no principal given".into(),
                }
            }
            Operand::Annotation(key) => {
                return format!(
                    "`annotation.{}` is {}: {}",
                    key.name(),
                    facts.annotation(*key),
                    self.annotation_saw(*key, facts)
                )
            }
            Operand::Args(steps) => (selector("args", steps), self.select(operand)),
            Operand::Assigns(steps) => (selector("assigns", steps), self.select(operand)),
        };
        let present: Vec<&Value> = values.iter().filter_map(|v| *v).collect();
        if present.is_empty() {
            return format!("`{label}` is missing");
        }
        let describe = |v: &Value| -> String {
            let mut s = format!("{} ({})", kind_word(v), short(v));
            if let Some(need) = need {
                let ok = match need {
                    "a number" => v.is_number() || v.is_array(),
                    _ => v.is_string() || v.is_array(),
                };
                if !ok {
                    s.push_str(&format!(", not {need}: the test fails"));
                }
            }
            s
        };
        if present.len() == 1 && values.len() == 1 {
            format!("`{label}` is {}", describe(present[0]))
        } else {
            let missing = values.len() - present.len();
            format!(
                "`{label}` selects {} value(s){}: {}",
                present.len(),
                if missing > 0 {
                    format!(" ({missing} missing)")
                } else {
                    String::new()
                },
                present
                    .iter()
                    .map(|v| describe(v))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }
    }
}

/// Collects what a selector finds, as the evaluator walks it: a key step
/// that meets a list applies to each element.
fn collect<'v>(value: &'v Value, steps: &[SelStep], out: &mut Vec<Option<&'v Value>>) {
    let Some((step, rest)) = steps.split_first() else {
        out.push(Some(value));
        return;
    };
    match (step, value) {
        (SelStep::Key(k), Value::Object(map)) => match map.get(&**k) {
            Some(v) => collect(v, rest, out),
            None => out.push(None),
        },
        (SelStep::Key(_), Value::Array(items)) => {
            for item in items {
                collect(item, steps, out);
            }
        }
        (SelStep::Index(i), Value::Array(items)) => match items.get(*i) {
            Some(v) => collect(v, rest, out),
            None => out.push(None),
        },
        _ => out.push(None),
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `args.a.b[0]`, `args["odd key"]`.
fn selector(root: &str, steps: &[SelStep]) -> String {
    let mut s = root.to_string();
    for step in steps {
        match step {
            SelStep::Key(k) if is_ident(k) => {
                s.push('.');
                s.push_str(k);
            }
            SelStep::Key(k) => {
                s.push('[');
                s.push_str(&Value::String(k.to_string()).to_string());
                s.push(']');
            }
            SelStep::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

fn kind_word(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A value's JSON, cut short.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}

impl Explanation {
    /// `file:line:col` of a span in the policy's source.
    fn location(policy: &Policy, span: Span) -> (usize, usize) {
        policy.source.line_col(span.start)
    }

    /// The explanation as text, one line a step (`file:line:col: ...`),
    /// predicate notes indented below their rule, the decision last.
    pub fn render(&self, policy: &Policy) -> String {
        let file = &policy.source.name;
        let mut out = String::new();
        for step in &self.steps {
            let (line, col) = Self::location(policy, step.span);
            let who = match &step.rule_id {
                Some(id) => format!("{} {id}", step.stage.as_str()),
                None => step.stage.as_str().to_string(),
            };
            out.push_str(&format!(
                "{file}:{line}:{col}: {who}: {}: {}\n",
                step.outcome.as_str().replace('_', " "),
                step.detail
            ));
            for note in &step.notes {
                let (line, col) = Self::location(policy, note.span);
                out.push_str(&format!(
                    "    {file}:{line}:{col}: `{}` {}: {}\n",
                    note.text,
                    tri_phrase(note.result),
                    note.saw
                ));
            }
        }
        if self.not_considered > 0 {
            out.push_str(&format!(
                "({} later rule(s) not considered: the decision was made)\n",
                self.not_considered
            ));
        }
        let d = &self.decision;
        let at = match d.rule_span {
            Some(span) => {
                let (line, col) = Self::location(policy, span);
                format!(" at {file}:{line}:{col}")
            }
            None => String::new(),
        };
        out.push_str(&format!(
            "decision: {} (source: {}, reason: {}, rule_id: {}){at}\n",
            d.decision.as_str(),
            d.source.as_str(),
            d.reason.as_str(),
            d.rule_id.as_deref().unwrap_or("null"),
        ));
        out
    }

    /// The explanation as JSON: `{"policy", "steps": [...], "not_considered",
    /// "decision": {eval's fields, "line"}}`.
    pub fn to_json(&self, policy: &Policy) -> Value {
        let file = &policy.source.name;
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                let (line, column) = Self::location(policy, s.span);
                json!({
                    "stage": s.stage.as_str(),
                    "rule_id": s.rule_id.as_deref(),
                    "outcome": s.outcome.as_str(),
                    "detail": s.detail,
                    "file": file,
                    "line": line,
                    "column": column,
                    "predicates": s.notes.iter().map(|n| {
                        let (line, column) = Self::location(policy, n.span);
                        json!({
                            "text": n.text,
                            "result": tri_str(n.result),
                            "saw": n.saw,
                            "line": line,
                            "column": column,
                        })
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut decision = self.decision.to_json();
        if let (Value::Object(map), Some(span)) = (&mut decision, self.decision.rule_span) {
            let (line, column) = Self::location(policy, span);
            map.insert("file".into(), Value::from(file.as_str()));
            map.insert("line".into(), Value::from(line));
            map.insert("column".into(), Value::from(column));
        }
        json!({
            "policy": self.policy,
            "steps": steps,
            "not_considered": self.not_considered,
            "decision": decision,
        })
    }
}
