//! Why a condition came out as it did: a note for each predicate, with
//! what the request held where the predicate looked.

use serde_json::Value;

use crate::eval::{eval_pred, trusts, Facts, Tri};
use crate::fingerprint::kind_of;
use crate::paths;
use crate::policy::{AnnotationKey, Cond, Operand, Pred, Step as SelStep, Test, Trusted};
use crate::syntax::{self, TargetKind};

use super::trace::Note;
use super::walk::Walk;

impl<'a, 'r> Walk<'a, 'r> {
    /// Evaluates a condition and keeps the predicates that made it come out
    /// as it did.
    pub(super) fn explain_cond(&self, cond: &Cond, facts: &Facts<'_>) -> (Tri, Vec<Note>) {
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
                if request.taint_unknown {
                    return "the host could not read the session's taint: `tainted` fails closed"
                        .into();
                }
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
                let Some(resolved) = root.resolve(request.cwd) else {
                    return match request.cwd {
                        None => format!("`{root}` is unknown (no cwd given): the test fails closed"),
                        Some(c) => format!(
                            "`{root}` is unknown (cwd {} is not an absolute path): the test fails closed",
                            short(&Value::String(c.into()))
                        ),
                    };
                };
                let root = match root.is_cwd() {
                    true => format!("{resolved} (`{root}`)"),
                    false => resolved.to_string(),
                };
                let root_path = resolved.as_ref();
                let mut verdicts = Vec::new();
                let values = self.select(operand);
                let leaves = values.into_iter().flatten().flat_map(|v| match v {
                    Value::Array(items) => items.iter().collect::<Vec<_>>(),
                    other => vec![other],
                });
                for v in leaves {
                    verdicts.push(match v.as_str() {
                        Some(s) if paths::inside(s, root_path) => {
                            format!("{} is inside {root}", short(v))
                        }
                        Some(s) => match paths::canonicalize(s, root_path) {
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
            let mut s = format!("{} ({})", kind_of(v), short(v));
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
