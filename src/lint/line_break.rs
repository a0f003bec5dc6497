//! `line_break_in_allow`: a `matches` regex where a match widens access
//! (an allow rule, or a deny or ask rule under `not`) that lets a line
//! break through: a class that can match `\n` (a negated class such as
//! `[^;&|]` that does not exclude it, `\s`, `\W`, `.` under the `s` flag),
//! or `^`/`$` under the `m` flag, which match at every line.
//!
//! A shell runs each line of a command as a command of its own, so
//! `/^ls( [^;&|]*)?$/` allows `ls -la⏎curl … | sh`: the class keeps out
//! every separator but the one bash needs least. The regex is read with
//! the engine's own parser (`regex-syntax`), and what is reported is what
//! its compiled classes can match, not how the regex is spelt.

use regex_syntax::ast::{self, AssertionKind, Ast};
use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::{each_rule_test, Ctx, LINE_BREAK_IN_ALLOW};
use crate::syntax::{Cond, Span};

/// What lets the line break through, and where in the regex (byte offsets
/// of the regex's own text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub start: usize,
    pub end: usize,
    pub what: What,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// A class (bracketed, `\s`, `\pL`, ...) that holds `\n`.
    Class,
    /// `.` under the `s` flag.
    Dot,
    /// `^` or `$` under the `m` flag.
    Anchor,
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        let effect = rule.ir.effect.as_str();
        each_rule_test(rule.ast, &mut |cond, widening| {
            if let Cond::Matches { regex, .. } = cond {
                if widening {
                    if let Some(f) = finding(&regex.node) {
                        found.push((effect, regex.span, regex.node.clone(), f));
                    }
                }
            }
        });
    }
    for (effect, regex_span, source, f) in found {
        // The regex literal starts with `/` and `\/` stands for `/`; point
        // at the part when the offsets still line up.
        let span = if source.contains('/') {
            regex_span
        } else {
            Span::new(regex_span.start + 1 + f.start, regex_span.start + 1 + f.end)
        };
        let part = source.get(f.start..f.end).unwrap_or_default().to_string();
        let this = if effect == "allow" {
            "this allow regex".to_string()
        } else {
            format!("this regex (under `not` in a {effect} rule, so a match lets the call past the rule)")
        };
        let (message, label, help) = match f.what {
            What::Class => (
                format!("{this} lets a line break through: `{part}` matches `\\n`"),
                "matches a line break".to_string(),
                match fixed_class(&part) {
                    Some(fixed) => format!(
                        "a shell runs each line as a command of its own, so what follows a line break escapes the test; keep line breaks out of the class: `{fixed}`"
                    ),
                    None => "a shell runs each line as a command of its own, so what follows a line break escapes the test; use a class that excludes line breaks, e.g. `[^\\n\\r]` instead of `.` with `s`, `[ \\t]` instead of `\\s`, `[^;&|\\n\\r]` instead of `[^;&|]`".to_string(),
                },
            ),
            What::Dot => (
                format!("{this} lets a line break through: `.` matches `\\n` under the `s` flag"),
                "matches a line break".to_string(),
                "a shell runs each line as a command of its own, so what follows a line break escapes the test; drop the `s` flag, or write `[^\\n\\r]` for the `.`".to_string(),
            ),
            What::Anchor => (
                format!("{this} lets a line break through: `{part}` under the `m` flag matches at every line, not only at the ends of the text"),
                "matches at a line break".to_string(),
                "a shell runs each line as a command of its own, so one line that matches lets the others through; drop the `m` flag, or anchor with `\\A` and `\\z`".to_string(),
            ),
        };
        let diagnostic = cx
            .warning(&LINE_BREAK_IN_ALLOW, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(&LINE_BREAK_IN_ALLOW, diagnostic);
    }
}

/// A bracketed class with `\n\r` added to what it excludes (`[^;&|]` is
/// `[^;&|\n\r]`), when it is one.
fn fixed_class(class: &str) -> Option<String> {
    let inner = class.strip_prefix("[^")?.strip_suffix(']')?;
    Some(format!("[^{inner}\\n\\r]"))
}

/// The first place `source` lets `\n` through, if it does (and parses).
pub(crate) fn finding(source: &str) -> Option<Finding> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(source)
        .ok()?;
    let (class, anchor) = hir_lets_newline(&hir);
    if !class && !anchor {
        return None;
    }
    let ast = ast::parse::Parser::new().parse(source).ok()?;
    let mut out = None;
    locate(&ast, class, anchor, &mut out);
    // The compiled regex lets it through but no single part was found (a
    // flag set in a group, say): point at the whole regex.
    Some(out.unwrap_or(Finding {
        start: 0,
        end: source.len(),
        what: if class { What::Class } else { What::Anchor },
    }))
}

/// Whether a class of the compiled regex holds `\n`, and whether it has a
/// multi-line anchor.
fn hir_lets_newline(hir: &Hir) -> (bool, bool) {
    match hir.kind() {
        HirKind::Class(c) => (class_has_newline(c), false),
        HirKind::Look(l) => (
            false,
            matches!(
                l,
                Look::StartLF | Look::EndLF | Look::StartCRLF | Look::EndCRLF
            ),
        ),
        HirKind::Repetition(r) => hir_lets_newline(&r.sub),
        HirKind::Capture(c) => hir_lets_newline(&c.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            parts.iter().fold((false, false), |(c, a), p| {
                let (pc, pa) = hir_lets_newline(p);
                (c || pc, a || pa)
            })
        }
        HirKind::Empty | HirKind::Literal(_) => (false, false),
    }
}

fn class_has_newline(class: &Class) -> bool {
    match class {
        Class::Unicode(c) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= '\n' && '\n' <= r.end()),
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
    }
}

/// Whether one class node, compiled alone, holds `\n`.
fn node_has_newline(node: Ast) -> bool {
    let hir = regex_syntax::hir::translate::Translator::new().translate("", &node);
    hir.is_ok_and(|h| hir_lets_newline(&h).0)
}

/// The first part of the regex that lets `\n` through.
fn locate(ast: &Ast, class: bool, anchor: bool, out: &mut Option<Finding>) {
    if out.is_some() {
        return;
    }
    let at = |span: &ast::Span, what| Finding {
        start: span.start.offset,
        end: span.end.offset,
        what,
    };
    match ast {
        Ast::ClassBracketed(c) if class && node_has_newline(Ast::ClassBracketed(c.clone())) => {
            *out = Some(at(&c.span, What::Class));
        }
        Ast::ClassPerl(c) if class && node_has_newline(Ast::ClassPerl(c.clone())) => {
            *out = Some(at(&c.span, What::Class));
        }
        Ast::ClassUnicode(c) if class && node_has_newline(Ast::ClassUnicode(c.clone())) => {
            *out = Some(at(&c.span, What::Class));
        }
        // Alone, `.` never matches `\n`: one that does is under `s`.
        Ast::Dot(span) if class => *out = Some(at(span, What::Dot)),
        Ast::Assertion(a)
            if anchor && matches!(a.kind, AssertionKind::StartLine | AssertionKind::EndLine) =>
        {
            *out = Some(at(&a.span, What::Anchor));
        }
        Ast::Repetition(r) => locate(&r.ast, class, anchor, out),
        Ast::Group(g) => locate(&g.ast, class, anchor, out),
        Ast::Alternation(a) => {
            for part in &a.asts {
                locate(part, class, anchor, out);
            }
        }
        Ast::Concat(c) => {
            for part in &c.asts {
                locate(part, class, anchor, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(source: &str) -> Option<(String, What)> {
        finding(source).map(|f| (source[f.start..f.end].to_string(), f.what))
    }

    #[test]
    fn classes_that_hold_a_line_break() {
        assert_eq!(
            what(r"^ls( [^;&|`$<>()\\]*)?$"),
            Some((r"[^;&|`$<>()\\]".to_string(), What::Class))
        );
        assert_eq!(what(r"^cargo\s+test$"), Some((r"\s".into(), What::Class)));
        assert_eq!(what(r"^a\W$"), Some((r"\W".into(), What::Class)));
        assert_eq!(
            what(r"^a[\x00-\x7f]$"),
            Some((r"[\x00-\x7f]".into(), What::Class))
        );
        assert_eq!(what(r"^a\p{Cc}$"), Some((r"\p{Cc}".into(), What::Class)));
        assert_eq!(what(r"(?s)^ls.*$"), Some((".".into(), What::Dot)));
        assert_eq!(what(r"^ls(?s:.*)$"), Some((".".into(), What::Dot)));
        assert_eq!(what(r"(?m)^ls$"), Some(("^".into(), What::Anchor)));
    }

    #[test]
    fn classes_that_keep_it_out() {
        for ok in [
            r"^ls( [^;&|`$<>()\\\n\r]*)?$",
            r"^ls( [^\s;])*$",
            r"^ls.*$",
            r"^ls[ \t]+-la$",
            r"^(ls|pwd)$",
            r"^ls\nx$",
            r"\Als\z",
            r"[[:^space:]]",
            r"not( a regex",
        ] {
            assert_eq!(finding(ok), None, "{ok}");
        }
    }

    #[test]
    fn the_fix_adds_the_line_breaks() {
        assert_eq!(fixed_class("[^;&|]").as_deref(), Some(r"[^;&|\n\r]"));
        assert_eq!(fixed_class(r"\s"), None);
    }
}
