//! The recorder: the [`Sink`] that `explain` hands to the decision
//! procedure ([`crate::eval::run`]), turning what the procedure tells it
//! into steps and notes. It decides nothing: every result it writes down
//! is the procedure's own (the index's candidates, the evaluator's values
//! and walk), so an explanation cannot disagree with a decision.

use serde_json::Value;

use crate::eval::sink::{HostCall, Reached, RuleSeen, Sink};
use crate::eval::{trusts, Facts, Refused, Request, Tri, Verdict};
use crate::fingerprint::{kind_of, ToolApproval};
use crate::paths;
use crate::policy::{
    AnnotationKey, DefaultDecision, Hits, Operand, Policy, Pred, Rule, Shown, Step as SelStep,
    Test, Trusted,
};
use crate::syntax::{self, Effect, Span, TargetKind};

use super::trace::{ExplainStep, Note, Outcome, Stage};

/// A place a selector reached, kept for the predicate's note.
enum Seen {
    Value {
        /// The JSON value, cut short.
        json: String,
        kind: &'static str,
        is_number: bool,
        text: Option<String>,
        result: Tri,
    },
    Missing,
    TooDeep,
}

pub(super) struct Recorder<'a, 'r> {
    policy: &'a Policy,
    request: &'a Request<'r>,
    /// The name as rules match it: a resource's normalized URI.
    name: String,
    pub(super) steps: Vec<ExplainStep>,
    /// Notes of the condition being evaluated.
    notes: Vec<Note>,
    /// What the current predicate's selector reached.
    seen: Vec<Seen>,
    /// What the current host predicate did.
    host: Option<String>,
}

impl<'a, 'r> Recorder<'a, 'r> {
    pub(super) fn new(policy: &'a Policy, request: &'a Request<'r>) -> Self {
        Recorder {
            policy,
            request,
            name: request.name.to_string(),
            steps: Vec::new(),
            notes: Vec::new(),
            seen: Vec::new(),
            host: None,
        }
    }

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
}

impl Sink for Recorder<'_, '_> {
    const ON: bool = true;

    fn refused(&mut self, policy: &Policy, request: &Request<'_>, refused: &Refused) {
        let detail = match refused {
            Refused::Server => format!(
                "the server id `{}` holds `/`, so `server/tool` would split two ways: the request is refused",
                request.server
            ),
            Refused::Uri(e) => format!(
                "the URI `{}` cannot be normalized ({e}): the read is refused before any rule",
                request.name
            ),
        };
        self.step(Stage::Request, policy.name_span, Outcome::Decided, detail);
    }

    fn out_of_scope(&mut self, policy: &Policy, request: &Request<'_>) {
        let span = policy.setting_spans.scope.unwrap_or(policy.name_span);
        let detail = format!(
            "the policy's scope does not include {}s: the {} is not governed",
            request.kind.as_str(),
            self.request_text()
        );
        self.step(Stage::Scope, span, Outcome::Decided, detail);
    }

    fn normalized(&mut self, policy: &Policy, request: &Request<'_>, name: &str) {
        let detail = if name == request.name {
            format!("the URI `{name}` is already normal (RFC 3986 section 6)")
        } else {
            format!(
                "the URI `{}` is matched as `{name}` (normalized: RFC 3986 section 6, dot segments removed)",
                request.name
            )
        };
        self.name = name.to_string();
        self.step(Stage::Request, policy.name_span, Outcome::Passed, detail);
    }

    fn visibility(&mut self, policy: &Policy, request: &Request<'_>, shown: Shown, hits: &Hits) {
        let name_span = policy.name_span;
        let Some(vis) = &policy.visibility else {
            self.step(
                Stage::Visibility,
                name_span,
                Outcome::Passed,
                "no `tools {}` block: every tool is visible".into(),
            );
            return;
        };
        // The first deciding pattern in file order.
        let pattern = hits
            .iter()
            .min()
            .and_then(|&i| vis.patterns.get(i as usize));
        let tool = format!("`{}/{}`", request.server, request.name);
        let (span, outcome, detail) = match (shown, pattern) {
            (Shown::Included, Some(p)) => (
                p.span,
                Outcome::Passed,
                format!(
                    "{tool} is shown: included by {} (exact)",
                    self.policy.source.text_of(p.span)
                ),
            ),
            (Shown::Excluded, Some(p)) => (
                p.span,
                Outcome::Decided,
                format!(
                    "{tool} is hidden: excluded by {} (matched loosely); it is denied before any rule",
                    self.policy.source.text_of(p.span)
                ),
            ),
            (Shown::NotIncluded, _) => (
                vis.span,
                Outcome::Decided,
                format!(
                    "{tool} is hidden: no include pattern names it (include matches exactly); it is denied before any rule"
                ),
            ),
            _ => (
                vis.span,
                Outcome::Passed,
                format!(
                    "{tool} is shown: no exclude pattern matches it and the include list is empty"
                ),
            ),
        };
        self.step(Stage::Visibility, span, outcome, detail);
    }

    fn rule(&mut self, rule: &Rule, seen: RuleSeen) {
        let (stage, loose) = match rule.effect {
            Effect::Deny => (Stage::Deny, true),
            Effect::Ask => (Stage::Ask, true),
            Effect::Allow => (Stage::Allow, false),
        };
        // A `let` name that stands for several targets is written once.
        let mut written: Vec<_> = rule.targets.iter().collect();
        written.dedup_by_key(|t| t.span);
        let targets = written
            .iter()
            .map(|t| t.text(&self.policy.source))
            .collect::<Vec<_>>()
            .join(", ");
        let (outcome, detail) = match seen {
            RuleSeen::NoTarget => (
                Outcome::TargetNoMatch,
                format!(
                    "no target matches {}: {targets}{}",
                    self.request_text(),
                    if loose {
                        " (matched loosely)"
                    } else {
                        " (matched exactly)"
                    }
                ),
            ),
            RuleSeen::SkippedNew => (
                Outcome::SkippedNewTool,
                format!(
                    "skipped: the tool is new (no approved fingerprint), `allow_new_tools` is off, and no matching target is exact (`\"server/tool\"` with no `*` or `?`): {targets}"
                ),
            ),
            RuleSeen::Condition(Tri::True) => (
                Outcome::Matched,
                if rule.condition.is_some() {
                    "target matches and the condition holds".to_string()
                } else {
                    "target matches (no condition)".to_string()
                },
            ),
            RuleSeen::Condition(Tri::Failed) if loose => (
                Outcome::PredicateFailed,
                format!(
                    "target matches; a predicate failed, which counts as a match in {} rule",
                    if rule.effect == Effect::Ask {
                        "an ask"
                    } else {
                        "a deny"
                    }
                ),
            ),
            RuleSeen::Condition(_) => (
                Outcome::ConditionFalse,
                if loose {
                    "target matches; the condition does not hold".to_string()
                } else {
                    "target matches; the condition does not hold (a failed predicate never allows)"
                        .to_string()
                },
            ),
        };
        self.steps.push(ExplainStep {
            stage,
            rule_id: Some(rule.id.clone()),
            span: rule.span,
            outcome,
            detail,
            notes: std::mem::take(&mut self.notes),
        });
    }

    fn pin(&mut self, policy: &Policy, approval: ToolApproval, approver: bool, decides: bool) {
        let span = policy.setting_spans.pin_tools.unwrap_or(policy.name_span);
        // For a changed tool the procedure tells the pin once it knows what
        // the later stages would do: its step goes where the pin stands,
        // before the ask and allow steps, and when it decides those steps
        // are what it overrode, not part of the path.
        let at = self
            .steps
            .iter()
            .position(|s| matches!(s.stage, Stage::Ask | Stage::Allow | Stage::Default))
            .unwrap_or(self.steps.len());
        let (outcome, detail) = match (policy.settings.pin_tools, approval) {
            (false, _) => (Outcome::Passed, "pin_tools is off".to_string()),
            (true, ToolApproval::Approved) => (
                Outcome::Passed,
                "the tool's definition is the approved one (or no approved fingerprints were given)"
                    .to_string(),
            ),
            (true, ToolApproval::New) => (
                Outcome::Passed,
                "the tool has no approved fingerprint: it is new".to_string(),
            ),
            (true, ToolApproval::Changed) if decides => {
                let overridden = self.steps.split_off(at);
                let would = match overridden.last() {
                    Some(step) if matches!(step.outcome, Outcome::Matched | Outcome::PredicateFailed) => {
                        let id = step.rule_id.as_deref().unwrap_or("?");
                        match step.stage {
                            Stage::Ask => format!("ask rule `{id}` would ask"),
                            _ => format!("allow rule `{id}` would allow"),
                        }
                    }
                    _ => "the `ask` default would ask".to_string(),
                };
                (
                    Outcome::Decided,
                    format!(
                        "the tool's definition differs from its approved fingerprint, and {would}: {}",
                        if approver {
                            "a person is asked about the change"
                        } else {
                            "no approver, so it is denied"
                        }
                    ),
                )
            }
            (true, ToolApproval::Changed) => (
                Outcome::Passed,
                "the tool's definition differs from its approved fingerprint, but no rule asks \
                 about or allows the call: the pin only tightens, so the `deny` default decides"
                    .to_string(),
            ),
        };
        self.step(Stage::Pin, span, outcome, detail);
        if let Some(step) = self.steps.pop() {
            let at = at.min(self.steps.len());
            self.steps.insert(at, step);
        }
    }

    fn default(&mut self, policy: &Policy, verdict: Verdict) {
        let default = policy.settings.default;
        let word = match default {
            DefaultDecision::Ask => "ask",
            DefaultDecision::Deny => "deny",
        };
        let why = match (default, verdict) {
            (DefaultDecision::Ask, Verdict::Deny) => " (no approver: an `ask` default denies)",
            _ => "",
        };
        let span = policy.setting_spans.default.unwrap_or(policy.name_span);
        self.step(
            Stage::Default,
            span,
            Outcome::Decided,
            format!("no rule decided: the default is `{word}`{why}"),
        );
    }

    fn mark(&self) -> usize {
        self.notes.len()
    }

    fn cut(&mut self, from: usize, to: usize) {
        if from < to && to <= self.notes.len() {
            self.notes.drain(from..to);
        }
    }

    fn reached(&mut self, reached: Reached<'_>) {
        self.seen.push(match reached {
            Reached::Value(v, result) => Seen::Value {
                json: short(v),
                kind: kind_of(v),
                is_number: v.is_number(),
                text: v.as_str().map(String::from),
                result,
            },
            Reached::Missing => Seen::Missing,
            Reached::TooDeep => Seen::TooDeep,
        });
    }

    fn host(&mut self, call: HostCall<'_>) {
        self.host = Some(match call {
            HostCall::Unregistered => "is not registered: it fails closed".to_string(),
            HostCall::Returned(b) => format!("returned {b}"),
            HostCall::Failed(e) => format!("failed ({e}): it fails closed"),
            HostCall::Panicked => "panicked: it fails closed".to_string(),
        });
    }

    fn predicate(&mut self, pred: &Pred, result: Tri, facts: &Facts<'_>) {
        let text = self
            .policy
            .source
            .text
            .get(pred.span.start..pred.span.end)
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut saw = self.saw(pred, facts);
        for (name, value) in &pred.names {
            saw.push_str(&format!("; `{name}` is {value}"));
        }
        self.seen.clear();
        self.host = None;
        self.notes.push(Note {
            span: pred.span,
            text,
            result,
            saw,
        });
    }
}

impl Recorder<'_, '_> {
    /// What a predicate saw, in words.
    fn saw(&self, pred: &Pred, facts: &Facts<'_>) -> String {
        let request = self.request;
        match &pred.test {
            Test::Annotation(key) => self.annotation_saw(*key, facts),
            Test::Tainted { ignore, by } => {
                if request.taint_unknown {
                    return "the host could not read the session's taint: `tainted` fails closed"
                        .into();
                }
                if request.taint.is_empty() {
                    return "no taint given: the call is untainted".into();
                }
                let counted: Vec<&str> = request
                    .taint
                    .iter()
                    .copied()
                    .filter(|t| {
                        crate::policy::condition::taint_counts(
                            ignore,
                            by.as_deref(),
                            t,
                            request.server,
                        )
                    })
                    .collect();
                let only = match by {
                    Some(by) => format!(
                        "; only [{}] count",
                        by.iter().map(|s| &**s).collect::<Vec<_>>().join(", ")
                    ),
                    None => String::new(),
                };
                format!(
                    "taint is [{}]; the tool's own server `{}`{} does not count{only}; counted: [{}]",
                    request.taint.join(", "),
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
            Test::Host { name, .. } => format!(
                "`host.{name}` {}",
                self.host.as_deref().unwrap_or("was not called")
            ),
            Test::Exists(op) => self.operand_saw(op, facts, None),
            Test::Compare { operand, op, .. } => {
                let need = match op {
                    syntax::CompareOp::Eq | syntax::CompareOp::Ne => None,
                    _ => Some("a number"),
                };
                self.operand_saw(operand, facts, need)
            }
            Test::In { operand, .. } => self.operand_saw(operand, facts, None),
            Test::Matches { operand, .. } => self.operand_saw(operand, facts, Some("a string")),
            Test::Runs { operand, .. } | Test::WritesInside { operand, .. } => {
                let base = self.operand_saw(operand, facts, Some("a string"));
                match self.seen.as_slice() {
                    [Seen::Value {
                        text: Some(line), ..
                    }] => format!("{base}; {}", crate::eval::shell::summary(line)),
                    _ => base,
                }
            }
            Test::Inside { operand, root } | Test::Escapes { operand, root } => {
                let inside_when = matches!(pred.test, Test::Inside { .. });
                let Some(resolved) = root.resolve(request.cwd) else {
                    return match request.cwd {
                        None => format!("`{root}` is unknown (no cwd given): the test fails closed"),
                        Some(c) => format!(
                            "`{root}` is unknown (cwd {} is not an absolute path): the test fails closed",
                            Value::String(c.into())
                        ),
                    };
                };
                let root_path: &str = &resolved;
                let root = match root.is_cwd() {
                    true => format!("{resolved} (`{root}`)"),
                    false => resolved.to_string(),
                };
                let base = self.operand_saw(operand, facts, Some("a string"));
                let verdicts: Vec<String> = self
                    .seen
                    .iter()
                    .filter_map(|s| match s {
                        Seen::Value {
                            json, text, result, ..
                        } => Some(match text {
                            // The evaluator's own answer: inside or not.
                            Some(_) if (*result == Tri::True) == inside_when => {
                                format!("{json} is inside {root}")
                            }
                            Some(s) => match paths::canonicalize(s, facts.cwd()) {
                                Ok(c) if paths::is_within(&c, root_path) => format!(
                                    "{json} is outside {root} once its symbolic links are read \
                                     (`resolve_links`; as written it is `{c}`)"
                                ),
                                Ok(c) => format!("{json} is outside {root} (as `{c}`)"),
                                Err(e) => format!("{json} is not a usable path ({e})"),
                            },
                            None => format!("{json} is not a path"),
                        }),
                        _ => None,
                    })
                    .collect();
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
            None => format!(
                "the server is trusted; its `{hint}` is absent, so MCP's default {value} is used"
            ),
        }
    }

    /// What an operand selected, as the evaluator's walk reached it.
    fn operand_saw(&self, operand: &Operand, facts: &Facts<'_>, need: Option<&str>) -> String {
        let label = match operand {
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
            Operand::Args(steps) => selector("args", steps),
            Operand::Assigns(steps) => selector("assigns", steps),
        };
        let describe = |json: &str, kind: &str, is_number: bool, is_text: bool| -> String {
            let mut s = format!("{kind} ({json})");
            let ok = match need {
                Some("a number") => is_number,
                Some(_) => is_text,
                None => true,
            };
            if let (false, Some(need)) = (ok, need) {
                s.push_str(&format!(", not {need}: the test fails"));
            }
            s
        };
        let mut present = Vec::new();
        let (mut missing, mut too_deep) = (0, 0);
        for seen in &self.seen {
            match seen {
                Seen::Value {
                    json,
                    kind,
                    is_number,
                    text,
                    ..
                } => present.push(describe(json, kind, *is_number, text.is_some())),
                Seen::Missing => missing += 1,
                Seen::TooDeep => too_deep += 1,
            }
        }
        let deep = if too_deep > 0 {
            format!(
                " ({too_deep} nested deeper than {} lists: the test fails there)",
                crate::eval::MAX_LIST_NESTING
            )
        } else {
            String::new()
        };
        match (present.as_slice(), missing, too_deep) {
            ([], _, 0) => format!("`{label}` is missing"),
            ([one], 0, 0) => format!("`{label}` is {one}"),
            _ => format!(
                "`{label}` selects {} value(s){}{deep}: {}",
                present.len(),
                if missing > 0 {
                    format!(" ({missing} missing)")
                } else {
                    String::new()
                },
                present.join("; ")
            ),
        }
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
pub(crate) fn selector(root: &str, steps: &[SelStep]) -> String {
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

/// A value's JSON, cut short, and the cut said (a value that ends in
/// `...` of its own cannot pass for a cut one, nor a cut one for whole).
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}… (cut: {} bytes in all)", s.len())
    } else {
        s
    }
}
