//! Conditions: selectors resolved, literals checked, regexes compiled, host
//! predicates looked up, and each predicate's quantifier fixed by polarity.

use crate::diagnostics::codes;
use serde_json::Value;

use super::Compiler;
use crate::diagnostics::{did_you_mean, Diagnostic};
use crate::policy::{AnnotationKey, Cond, Operand, Pred, Quantifier, Step, Test};
use crate::syntax::keywords::{Predicate, Selector, TestWord};
use crate::syntax::{self, CompareOp, Effect, SelectorAst, Span};

/// Where a predicate stands: in which kind of rule, under how many `not`s.
#[derive(Clone, Copy)]
pub(super) struct Polarity {
    pub effect: Effect,
    pub negated: bool,
}

impl Polarity {
    fn flip(self) -> Self {
        Polarity {
            negated: !self.negated,
            ..self
        }
    }

    /// `All` where a match widens access, `Any` where it narrows it.
    fn quantifier(self) -> Quantifier {
        let widening = (self.effect == Effect::Allow) != self.negated;
        if widening {
            Quantifier::All
        } else {
            Quantifier::Any
        }
    }
}

/// A selector resolved to an operand, or what else it names.
enum Resolved {
    Operand(Operand),
    Host(String, Span),
}

impl<'f> Compiler<'_, 'f> {
    pub(super) fn condition(&mut self, ast: &syntax::Cond, at: Polarity) -> Option<Cond> {
        match ast {
            syntax::Cond::Or(parts, _) | syntax::Cond::And(parts, _) => {
                let compiled: Vec<Option<Cond>> =
                    parts.iter().map(|p| self.condition(p, at)).collect();
                let compiled: Option<Vec<Cond>> = compiled.into_iter().collect();
                let compiled = compiled?.into_boxed_slice();
                Some(if matches!(ast, syntax::Cond::Or(..)) {
                    Cond::Or(compiled)
                } else {
                    Cond::And(compiled)
                })
            }
            syntax::Cond::Not(inner, _) => {
                Some(Cond::Not(Box::new(self.condition(inner, at.flip())?)))
            }
            _ => {
                let test = self.test(ast)?;
                let quantifier = match test {
                    Test::Inside { .. } => Quantifier::All,
                    Test::Escapes { .. } => Quantifier::Any,
                    Test::WritesInside { .. } => Quantifier::All,
                    _ => at.quantifier(),
                };
                let span = ast.span();
                let names = self
                    .name_values
                    .iter()
                    .filter(|n| n.span.start >= span.start && n.span.end <= span.end)
                    .map(|n| (n.name.clone(), n.value.clone()))
                    .collect();
                Some(Cond::Pred(Box::new(Pred {
                    test,
                    quantifier,
                    span,
                    names,
                })))
            }
        }
    }

    fn test(&mut self, ast: &syntax::Cond) -> Option<Test> {
        match ast {
            syntax::Cond::Tainted {
                ignore,
                by,
                span: _,
            } => {
                let ids = |list: &[syntax::Spanned<String>]| -> Box<[Box<str>]> {
                    list.iter()
                        .map(|s| s.node.clone().into_boxed_str())
                        .collect()
                };
                Some(Test::Tainted {
                    ignore: ids(ignore),
                    by: by.as_deref().map(ids),
                })
            }
            syntax::Cond::Exists { selector, .. } => {
                let operand = self.value_operand(selector, Predicate::Exists.as_str())?;
                if let Operand::Annotation(_) = operand {
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_BAD_TEST,
                            selector.span,
                            "annotations always have a value",
                        )
                        .with_label("always present")
                        .with_help("test the value instead: `annotation.read_only`"),
                    );
                    return None;
                }
                Some(Test::Exists(operand))
            }
            syntax::Cond::Bare(selector) => match self.selector(selector)? {
                Resolved::Host(name, span) => self.host(&name, span),
                Resolved::Operand(Operand::Annotation(key)) => Some(Test::Annotation(key)),
                Resolved::Operand(_) => {
                    let text = self.text(selector.span);
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_BARE_SELECTOR,
                            selector.span,
                            format!("`{text}` alone is not a condition"),
                        )
                        .with_label("needs a test")
                        .with_help(format!(
                            "test it: `exists {text}`, `{text} == true`, `{text} in [...]`"
                        )),
                    );
                    None
                }
            },
            syntax::Cond::Compare {
                selector,
                op,
                value,
                ..
            } => {
                let operand = self.value_operand(selector, op.node.as_str())?;
                let ordering = !matches!(op.node, CompareOp::Eq | CompareOp::Ne);
                if ordering && !value.node.is_number() {
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_ORDERING_NEEDS_NUMBER,
                            value.span,
                            format!("`{}` compares numbers only", op.node.as_str()),
                        )
                        .with_label("not a number")
                        .with_help(
                            "compare with a number, or use `==`, `in` or `matches` for strings",
                        ),
                    );
                    return None;
                }
                if let (true, serde_json::Value::Number(n)) = (ordering, &value.node) {
                    if crate::model::ExactNumber::of(n).is_none() {
                        self.push(
                            Diagnostic::error(
                                self.source,
                                codes::COMPILE_INEXACT_NUMBER,
                                value.span,
                                format!(
                                    "`{}` cannot be held exactly, so `{}` with it always fails",
                                    self.text(value.span).trim(),
                                    op.node.as_str()
                                ),
                            )
                            .with_label("beyond 64 bits")
                            .with_help(
                                "numbers compare exactly only as integers within 64 bits (up to 18446744073709551615) or as decimals; write a smaller bound",
                            ),
                        );
                        return None;
                    }
                }
                if let Operand::Annotation(key) = operand {
                    if ordering || !value.node.is_boolean() {
                        self.push(
                            Diagnostic::error(
                                self.source,
                                codes::COMPILE_BAD_TEST,
                                value.span,
                                format!("`annotation.{}` is true or false", key.name()),
                            )
                            .with_label("not a boolean test")
                            .with_help(format!(
                                "write `annotation.{0}`, `not annotation.{0}` or `annotation.{0} == false`",
                                key.name()
                            )),
                        );
                        return None;
                    }
                }
                Some(Test::Compare {
                    operand,
                    op: op.node,
                    value: value.node.clone(),
                })
            }
            syntax::Cond::In { selector, list, .. } => {
                let operand = self.value_operand(selector, TestWord::In.as_str())?;
                let Value::Array(items) = &list.node else {
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_IN_NEEDS_LIST,
                            list.span,
                            "`in` needs a list",
                        )
                        .with_label("not a list")
                        .with_help(
                            "write the values in brackets: `in [\"a\", \"b\"]`, or use `==`",
                        ),
                    );
                    return None;
                };
                Some(Test::In {
                    operand,
                    list: items.clone().into_boxed_slice(),
                })
            }
            syntax::Cond::Matches {
                selector, regex, ..
            } => {
                let operand = self.value_operand(selector, TestWord::Matches.as_str());
                let regex = self.condition_regex(&regex.node, regex.span);
                Some(Test::Matches {
                    operand: operand?,
                    regex: regex?,
                })
            }
            syntax::Cond::Path {
                selector,
                inside,
                root,
                ..
            } => {
                let word = if *inside {
                    TestWord::Inside
                } else {
                    TestWord::Escapes
                };
                let operand = self.value_operand(selector, word.as_str());
                let canonical = self.root(root);
                let (operand, root) = (operand?, canonical?);
                Some(if *inside {
                    Test::Inside { operand, root }
                } else {
                    Test::Escapes { operand, root }
                })
            }
            syntax::Cond::Runs {
                selector,
                only,
                patterns,
                ..
            } => self.runs(selector, *only, patterns),
            syntax::Cond::Writes { selector, root, .. } => {
                let operand = self.value_operand(selector, "writes inside");
                let root = self.root(root);
                Some(Test::WritesInside {
                    operand: operand?,
                    root: root?,
                })
            }
            syntax::Cond::UnknownTest {
                selector,
                word,
                value,
                ..
            } if TestWord::from_name(&word.node).is_some() => {
                self.misused_test(selector, word, *value);
                None
            }
            syntax::Cond::UnknownTest { word, .. } => {
                let help = match did_you_mean(&word.node, TestWord::names()) {
                    Some(t) => format!("did you mean `{t}`?"),
                    None => "the tests are `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `matches`, `inside` and `escapes`".to_string(),
                };
                self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_UNKNOWN_TEST,
                        word.span,
                        format!("unknown test `{}`", word.node),
                    )
                    .with_label("not a test")
                    .with_help(help),
                );
                None
            }
            syntax::Cond::Or(..) | syntax::Cond::And(..) | syntax::Cond::Not(..) => None,
        }
    }

    /// A test word with a value of a form it does not take:
    /// `args.path inside ["/srv", "/tmp"]`, `args.cmd matches "rm -rf"`.
    fn misused_test(
        &mut self,
        selector: &SelectorAst,
        word: &syntax::Spanned<String>,
        value: Span,
    ) {
        let Some(test) = TestWord::from_name(&word.node) else {
            return;
        };
        let sel = self.text(selector.span).to_string();
        let written = self.text(value).to_string();
        let parsed = serde_json::from_str::<Value>(&written).ok();
        let given = match written.chars().next() {
            Some('[') => "a list",
            Some('/') => "a regex",
            Some('"') => "a string",
            _ => "a number",
        };
        let strings: Option<Vec<String>> = match &parsed {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(|s| format!("{:?}", s)))
                .collect(),
            _ => None,
        };
        let help = match test {
            TestWord::Inside | TestWord::Escapes => {
                // Inside one of several roots is `or`; outside all is `and`.
                let join = if test == TestWord::Inside {
                    "or"
                } else {
                    "and"
                };
                match strings.filter(|s| !s.is_empty()) {
                    Some(roots) => format!(
                        "one root a test: `{}`",
                        roots
                            .iter()
                            .map(|r| format!("{sel} {test} {r}"))
                            .collect::<Vec<_>>()
                            .join(&format!(" {join} "))
                    ),
                    None => format!("write one absolute path in quotes: `{sel} {test} \"/srv\"`"),
                }
            }
            TestWord::Matches => match &parsed {
                Some(Value::String(s)) => format!(
                    "write a regex between slashes: `{sel} {test} /{}/`",
                    // `regex::escape` also escapes `-`, which only a
                    // class needs: dropped for readability.
                    regex::escape(s).replace("\\-", "-").replace('/', "\\/")
                ),
                _ => format!("write a regex between slashes: `{sel} {test} /^prefix/`"),
            },
            TestWord::In => format!("write the values in brackets: `{sel} {test} [\"a\", \"b\"]`"),
        };
        self.push(
            Diagnostic::error(
                self.source,
                codes::COMPILE_BAD_TEST,
                value,
                format!("`{test}` takes {}, not {given}", test.takes()),
            )
            .with_label(format!("{given} here"))
            .with_help(help),
        );
    }

    /// A selector that must give a value (not a host predicate).
    pub(super) fn value_operand(&mut self, selector: &SelectorAst, test: &str) -> Option<Operand> {
        match self.selector(selector)? {
            Resolved::Operand(op) => Some(op),
            Resolved::Host(name, span) => {
                self.push(
                    Diagnostic::error(
                        self.source,
                        codes::COMPILE_BAD_TEST,
                        span,
                        format!("`host.{name}` is a predicate and takes no `{test}`"),
                    )
                    .with_label("a host predicate")
                    .with_help(format!("use it alone: `host.{name}` or `not host.{name}`")),
                );
                None
            }
        }
    }

    fn selector(&mut self, selector: &SelectorAst) -> Option<Resolved> {
        let root_word = selector.root.node.as_str();
        let steps = || -> Box<[Step]> {
            selector
                .steps
                .iter()
                .map(|s| match &s.node {
                    syntax::Step::Key(k) => Step::Key(k.clone().into_boxed_str()),
                    syntax::Step::Index(i) => Step::Index(*i),
                })
                .collect()
        };
        let Some(root) = Selector::from_name(root_word) else {
            let help = match did_you_mean(root_word, Selector::names()) {
                Some(k) => format!("did you mean `{k}`?"),
                None => format!(
                    "a condition reads {}, or tests `{}`",
                    Selector::names()
                        .map(|r| format!("`{r}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    Predicate::Tainted
                ),
            };
            self.push(
                Diagnostic::error(
                    self.source,
                    codes::COMPILE_UNKNOWN_SELECTOR,
                    selector.root.span,
                    format!("unknown name `{root_word}` in a condition"),
                )
                .with_label("unknown")
                .with_help(help),
            );
            return None;
        };
        match root {
            Selector::Args => Some(Resolved::Operand(Operand::Args(steps()))),
            Selector::Assigns => Some(Resolved::Operand(Operand::Assigns(steps()))),
            Selector::Principal => {
                if let Some(step) = selector.steps.first() {
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_BAD_SELECTOR,
                            step.span,
                            "`principal` is a string and has no fields",
                        )
                        .with_label("no such field")
                        .with_help("host data about the principal belongs in `assigns.KEY`"),
                    );
                    return None;
                }
                Some(Resolved::Operand(Operand::Principal))
            }
            Selector::Annotation | Selector::Host => {
                let key = match selector.steps.as_slice() {
                    [one] => match &one.node {
                        syntax::Step::Key(k) => Some((k.as_str(), one.span)),
                        syntax::Step::Index(_) => None,
                    },
                    _ => None,
                };
                let Some((key, key_span)) = key else {
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_BAD_SELECTOR,
                            selector.span,
                            format!("`{root}` needs one name after it"),
                        )
                        .with_label("expected one name")
                        .with_help(if root == Selector::Host {
                            "write `host.NAME` with the name the host registered"
                        } else {
                            "write `annotation.read_only`, `destructive`, `open_world` or `idempotent`"
                        }),
                    );
                    return None;
                };
                let key_span = Span::new(key_span.start + 1, key_span.end);
                if root == Selector::Host {
                    return Some(Resolved::Host(key.to_string(), key_span));
                }
                self.annotation_key(key, key_span)
                    .map(|k| Resolved::Operand(Operand::Annotation(k)))
            }
        }
    }

    fn annotation_key(&mut self, key: &str, span: Span) -> Option<AnnotationKey> {
        if let Some((_, k)) = AnnotationKey::ALL.iter().find(|(n, _)| *n == key) {
            return Some(*k);
        }
        let by_hint = AnnotationKey::ALL
            .iter()
            .find(|(_, k)| k.hint().eq_ignore_ascii_case(key))
            .map(|(n, _)| *n);
        let names = AnnotationKey::ALL.map(|(n, _)| n);
        let help = match by_hint.or_else(|| did_you_mean(key, names)) {
            Some(k) => format!("did you mean `annotation.{k}`?"),
            None => format!(
                "the annotation keys are {}",
                names.map(|n| format!("`{n}`")).join(", ")
            ),
        };
        self.push(
            Diagnostic::error(
                self.source,
                codes::COMPILE_UNKNOWN_ANNOTATION,
                span,
                format!("unknown annotation `{key}`"),
            )
            .with_label("not an annotation key")
            .with_help(help),
        );
        None
    }

    fn host(&mut self, name: &str, span: Span) -> Option<Test> {
        let predicate = match &self.options.host {
            None => None,
            Some(registry) => match registry.get(name) {
                Some(p) => Some(p.clone()),
                None => {
                    let mut known: Vec<&str> = registry.names().collect();
                    known.sort_unstable();
                    let help = match did_you_mean(name, known.iter().copied()) {
                        Some(k) => format!("did you mean `host.{k}`?"),
                        None if known.is_empty() => "the host registered no predicates".to_string(),
                        None => format!(
                            "the host registered: {}",
                            known
                                .iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    };
                    self.push(
                        Diagnostic::error(
                            self.source,
                            codes::COMPILE_UNKNOWN_HOST_PREDICATE,
                            span,
                            format!("no host predicate `{name}`"),
                        )
                        .with_label("not registered")
                        .with_help(help),
                    );
                    return None;
                }
            },
        };
        Some(Test::Host {
            name: name.into(),
            predicate,
        })
    }
}
