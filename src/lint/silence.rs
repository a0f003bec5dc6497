//! Silencing a lint in the file: `# mcppol: allow(NAME, ...)`.
//!
//! - At the end of a line, the directive covers the item (rule, setting or
//!   `tools {}` block) that line belongs to.
//! - On a line of its own, it covers the next item.
//! - Between `policy NAME {` and the policy's first item (or at the end of
//!   the `policy NAME {` line), it covers the whole policy.
//!
//! Text after the closing `)` is free: say why, so the silence reads as a
//! decision (`# mcppol: allow(inexact_allow) reads of new tools may ask`).
//! An unknown lint name is itself a warning (`unknown_lint`), and so is a
//! `# mcppol:` comment that is not a well-formed directive
//! (`bad_directive`), and so is a name that silences nothing
//! (`unused_allow`), so that silences do not outlive their reason; none of
//! these three can be silenced.

use std::sync::Arc;

use super::{by_name, Lint, BAD_DIRECTIVE, LINTS, UNKNOWN_LINT, UNUSED_ALLOW};
use crate::diagnostics::{did_you_mean, Diagnostic, SourceFile};
use crate::syntax::lex::{Kind, Lexer};
use crate::syntax::{File, Item, PolicyAst, Span};

/// What one directive covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// Every warning inside the policy with this span.
    Policy(Span),
    /// Every warning inside this item.
    Item(Span),
}

#[derive(Debug, Clone)]
struct Directive {
    /// The lints it names, where, and whether it silenced one yet.
    names: Vec<(&'static Lint, Span, bool)>,
    cover: Option<Cover>,
}

/// The directives of one file, and the warnings about the directives
/// themselves.
#[derive(Debug, Clone, Default)]
pub struct Directives {
    list: Vec<Directive>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Directives {
    pub fn read(file: &File, source: &Arc<SourceFile>) -> Directives {
        let mut out = Directives::default();
        for comment in comments(&source.text) {
            let Some(parsed) = parse(&source.text, comment) else {
                continue;
            };
            let (names, args) = match parsed {
                Ok(p) => p,
                Err(span) => {
                    out.diagnostics.push(
                        Diagnostic::warning(
                            source,
                            BAD_DIRECTIVE.code,
                            span,
                            "this `# mcppol:` comment is not a directive the checker reads",
                        )
                        .with_label("not understood")
                        .with_help("write `# mcppol: allow(NAME, ...)`, then why, e.g. `# mcppol: allow(inexact_allow) reads of new tools may ask`"),
                    );
                    continue;
                }
            };
            let mut known = Vec::new();
            for (name, span) in names.into_iter().zip(args) {
                match by_name(&name) {
                    Some(lint) => known.push((lint, span, false)),
                    None => {
                        let help = match did_you_mean(&name, LINTS.iter().map(|l| l.name)) {
                            Some(k) => format!("did you mean `{k}`?"),
                            None => "the lints are listed in docs/checker.md".to_string(),
                        };
                        out.diagnostics.push(
                            Diagnostic::warning(
                                source,
                                UNKNOWN_LINT.code,
                                span,
                                format!("no lint named `{name}`"),
                            )
                            .with_label("unknown lint")
                            .with_help(help),
                        );
                    }
                }
            }
            out.list.push(Directive {
                names: known,
                cover: cover(file, source, comment),
            });
        }
        out
    }

    /// Whether a warning of `lint` at `span`, in `policy`, is silenced (and
    /// if so, the directives that silence it count as used).
    pub fn silences(&mut self, lint: &Lint, policy: &PolicyAst, span: Span) -> bool {
        let mut silenced = false;
        for d in &mut self.list {
            let covers = match d.cover {
                Some(Cover::Policy(p)) => p == policy.span,
                Some(Cover::Item(item)) => {
                    item.start <= span.start && span.start < item.end.max(item.start + 1)
                }
                None => false,
            };
            if !covers {
                continue;
            }
            for (named, _, used) in &mut d.names {
                if named.name == lint.name {
                    *used = true;
                    silenced = true;
                }
            }
        }
        silenced
    }

    /// `unused_allow` warnings: names that silenced nothing. Tool-aware
    /// lints only count when `tools` were given (else they never run).
    pub fn unused(&self, source: &Arc<SourceFile>, tools: bool) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for d in &self.list {
            for (lint, span, used) in &d.names {
                if *used || (!tools && TOOL_AWARE.contains(&lint.name)) {
                    continue;
                }
                let (message, help) = match d.cover {
                    None => (
                        format!("this `allow({})` applies to nothing", lint.name),
                        "put it on the line before a rule, at the end of one of the rule's lines, or right after `policy NAME {` for the whole policy",
                    ),
                    Some(_) => (
                        format!("`{}` is allowed here, but nothing here raises it", lint.name),
                        "remove it, so that every silence in the file marks a warning someone decided to keep",
                    ),
                };
                out.push(
                    Diagnostic::warning(source, UNUSED_ALLOW.code, *span, message)
                        .with_label("silences nothing")
                        .with_help(help),
                );
            }
        }
        out
    }
}

/// The lints that need `--tools`.
pub(crate) const TOOL_AWARE: [&str; 5] = [
    "unknown_tool",
    "unknown_argument",
    "argument_type",
    "path_not_string",
    "unmatched_tools_entry",
];

/// Where the directive in `comment` applies.
fn cover(file: &File, source: &SourceFile, comment: Span) -> Option<Cover> {
    let text = &source.text;
    let policy = file
        .policies
        .iter()
        .find(|p| p.span.start <= comment.start && comment.start < p.span.end)?;
    let items: Vec<Span> = policy.items.iter().map(item_span).collect();
    let first = items.first().map_or(policy.span.end, |s| s.start);
    if comment.start < first {
        return Some(Cover::Policy(policy.span));
    }
    let line_start = text[..comment.start].rfind('\n').map_or(0, |i| i + 1);
    let alone = text[line_start..comment.start].trim().is_empty();
    if alone {
        items
            .iter()
            .find(|s| s.start >= comment.end)
            .map(|s| Cover::Item(*s))
    } else {
        let line = source.line_col(comment.start).0;
        items
            .iter()
            .rev()
            .find(|s| source.line_col(s.start).0 <= line && line <= source.line_col(s.end).0)
            .map(|s| Cover::Item(*s))
    }
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Setting(s) => s.span,
        Item::Tools(t) => t.span,
        Item::Rule(r) => r.span,
        Item::Limit(l) => l.span,
        Item::Let(l) => l.span,
    }
}

/// The lint names of a directive and where each is written.
type Named = (Vec<String>, Vec<Span>);

/// Reads `# mcppol: allow(a, b) why`: `None` when the comment is not meant
/// for the checker, the names and their spans, or the span of what is
/// wrong.
fn parse(text: &str, comment: Span) -> Option<Result<Named, Span>> {
    let body = &text[comment.start..comment.end];
    let after_hash = body.strip_prefix('#')?;
    let lead = after_hash.len() - after_hash.trim_start().len();
    let rest = after_hash.trim_start().strip_prefix("mcppol:")?;
    let base = comment.start + 1 + lead + "mcppol:".len();
    let ws = rest.len() - rest.trim_start().len();
    let rest = rest.trim_start();
    let base = base + ws;
    let whole = Span::new(comment.start, comment.end);
    let Some(args) = rest.strip_prefix("allow(") else {
        return Some(Err(whole));
    };
    let Some(close) = args.find(')') else {
        return Some(Err(whole));
    };
    let mut names = Vec::new();
    let mut spans = Vec::new();
    let mut offset = base + "allow(".len();
    for part in args[..close].split(',') {
        let trimmed = part.trim();
        let at = offset + (part.len() - part.trim_start().len());
        if trimmed.is_empty() {
            return Some(Err(whole));
        }
        names.push(trimmed.to_string());
        spans.push(Span::new(at, at + trimmed.len()));
        offset += part.len() + 1;
    }
    Some(Ok((names, spans)))
}

/// The spans of every `#` comment (to the end of its line, without a
/// `\r`), skipping `#` inside strings and regex literals.
pub(crate) fn comments(text: &str) -> Vec<Span> {
    Lexer::new(text)
        .filter(|t| t.kind == Kind::Comment)
        .map(|t| t.span)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_skip_strings_and_regexes() {
        let text = "deny \"a#b\" # one\nallow \"x\" ~ /#/ when args.a matches /#x/ # two\n";
        let found: Vec<&str> = comments(text)
            .iter()
            .map(|s| &text[s.start..s.end])
            .collect();
        assert_eq!(found, vec!["# one", "# two"]);
    }

    #[test]
    fn directives_parse() {
        let text = "# mcppol: allow(shadowed_allow, inexact_allow) because";
        let (names, spans) = parse(text, Span::new(0, text.len())).unwrap().unwrap();
        assert_eq!(names, vec!["shadowed_allow", "inexact_allow"]);
        assert_eq!(&text[spans[1].start..spans[1].end], "inexact_allow");
        assert!(parse("# plain", Span::new(0, 7)).is_none());
        let bad = "# mcppol: alow(x)";
        assert!(parse(bad, Span::new(0, bad.len())).unwrap().is_err());
    }
}
