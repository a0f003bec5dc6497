//! `untrusted_annotation`: an annotation test in an allow rule that can
//! never let the rule allow for a server the policy does not trust. For
//! such a server every annotation takes its conservative value (not
//! read-only, destructive, open-world, not idempotent), so `allow ... when
//! annotation.read_only` never allows its tools, and neither does
//! `unless annotation.destructive`. Resource reads and prompt gets have no
//! trusted annotations at all.
//!
//! A test that is true with the conservative values, or a rule whose
//! targets name only trusted servers, is not reported; `trusted all` is
//! the business of `trust_all_annotations`.

use serde_json::Value;

use super::{Ctx, UNTRUSTED_ANNOTATION};
use crate::policy::glob::Glob;
use crate::policy::{AnnotationKey, Cond, Operand, Test, Trusted};
use crate::syntax::{CompareOp, Effect, Span, TargetKind};

/// The test's value with the conservative annotations, when it reads one.
fn conservative(test: &Test) -> Option<(AnnotationKey, bool)> {
    match test {
        Test::Annotation(key) => Some((*key, key.conservative())),
        Test::Compare {
            operand: Operand::Annotation(key),
            op,
            value: Value::Bool(b),
        } => match op {
            CompareOp::Eq => Some((*key, key.conservative() == *b)),
            CompareOp::Ne => Some((*key, key.conservative() != *b)),
            _ => None,
        },
        Test::In {
            operand: Operand::Annotation(key),
            list,
        } => Some((*key, list.contains(&Value::Bool(key.conservative())))),
        _ => None,
    }
}

/// Every annotation test that, with the conservative values, can never
/// help the condition hold: false outside `not`, true under it.
fn dead_tests(cond: &Cond, negated: bool, out: &mut Vec<(Span, AnnotationKey)>) {
    match cond {
        Cond::And(parts) | Cond::Or(parts) => {
            for part in parts.iter() {
                dead_tests(part, negated, out);
            }
        }
        Cond::Not(inner) => dead_tests(inner, !negated, out),
        Cond::Pred(pred) => {
            if let Some((key, value)) = conservative(&pred.test) {
                if value == negated {
                    out.push((pred.span, key));
                }
            }
        }
    }
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let trusted = &cx.policy.settings.trusted;
    if *trusted == Trusted::All {
        return;
    }
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.effect != Effect::Allow {
            continue;
        }
        let Some(cond) = &rule.ir.condition else {
            continue;
        };
        let mut dead = Vec::new();
        dead_tests(cond, false, &mut dead);
        if dead.is_empty() {
            continue;
        }
        // Which servers of the rule are not trusted.
        let whom = if rule.ir.kind != TargetKind::Tool {
            Some(format!("any {} request", rule.ir.kind.as_str()))
        } else {
            let mut named = Vec::new();
            let mut any = false;
            for t in &rule.ir.targets {
                match &t.matcher.server {
                    Glob::Literal(s) if trusted.contains(s) => {}
                    Glob::Literal(s) => {
                        if !named.contains(&s.to_string()) {
                            named.push(s.to_string());
                        }
                    }
                    _ => any = true,
                }
            }
            match (named.is_empty(), any) {
                (true, false) => None,
                (true, true) => Some("a server not in `trusted`".to_string()),
                (false, _) => Some(format!(
                    "server{} {}, not in `trusted`",
                    if named.len() == 1 { "" } else { "s" },
                    named
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        };
        let Some(whom) = whom else {
            continue;
        };
        let example = named_example(rule.ir.kind, &rule.ir.targets);
        for (span, key) in dead {
            let test = cx.text(span).trim_end().to_string();
            let message = format!(
                "`{test}` never lets this allow match for {whom}: an untrusted server's annotations take their conservative values (`{}` is {})",
                key.name(),
                key.conservative()
            );
            let help = if rule.ir.kind == TargetKind::Tool {
                format!(
                    "if you trust the server's hints, add it: `trusted {example}`; if the host trusts it at run time, silence this with `# mcppol: allow(untrusted_annotation)`; else allow the tools by name, without the annotation test"
                )
            } else {
                "resource reads and prompt gets have no trusted annotations: decide on the target or the arguments instead".to_string()
            };
            found.push((span, message, help));
        }
    }
    for (span, message, help) in found {
        let diagnostic = cx
            .warning(&UNTRUSTED_ANNOTATION, span, message)
            .with_label("never true for an untrusted server")
            .with_help(help);
        cx.emit(&UNTRUSTED_ANNOTATION, diagnostic);
    }
}

/// `"fs"` from the rule's first literal server, else `"SERVER"`.
fn named_example(kind: TargetKind, targets: &[crate::policy::Target]) -> String {
    if kind == TargetKind::Tool {
        for t in targets {
            if let Glob::Literal(s) = &t.matcher.server {
                return format!("\"{s}\"");
            }
        }
    }
    "\"SERVER\"".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicySet;

    /// The annotation tests of the policy's first allow rule that never
    /// help it match for an untrusted server.
    fn dead(condition: &str) -> Vec<&'static str> {
        let text = format!("policy p {{\n  allow \"s/t\" when {condition}\n}}\n");
        let set = PolicySet::from_text("p", &text).unwrap();
        let policy = set.get("p").unwrap();
        let rule = &policy.list(Effect::Allow).rules[0];
        let mut out = Vec::new();
        dead_tests(rule.condition.as_ref().unwrap(), false, &mut out);
        out.into_iter().map(|(_, key)| key.name()).collect()
    }

    #[test]
    fn tests_false_with_conservative_values_are_dead() {
        assert_eq!(dead("annotation.read_only"), ["read_only"]);
        assert_eq!(dead("not annotation.destructive"), ["destructive"]);
        assert_eq!(dead("annotation.open_world == false"), ["open_world"]);
        assert_eq!(dead("annotation.idempotent in [true]"), ["idempotent"]);
        assert_eq!(dead("annotation.destructive != true"), ["destructive"]);
    }

    #[test]
    fn tests_true_with_conservative_values_are_not() {
        assert!(dead("annotation.destructive").is_empty());
        assert!(dead("not annotation.read_only").is_empty());
        assert!(dead("annotation.idempotent == false").is_empty());
        assert!(dead("args.x == 1").is_empty());
    }
}
