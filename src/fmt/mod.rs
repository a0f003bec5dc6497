//! `mcppol fmt`: one canonical layout for policy files.
//!
//! - Two spaces of indentation a level; one item (setting, rule,
//!   `include`/`exclude`) a line; `;` dropped; one space between tokens,
//!   `, ` between targets and list members.
//! - A rule that does not fit in 100 columns wraps its targets (further
//!   lines indented two more than the rule) and puts `when ...` on its own
//!   line, indented the same; a condition still too long breaks before
//!   each top-level `and`/`or` (two further in). `not` takes parentheses
//!   except before a bare selector or `tainted`.
//! - Comments are kept: one on its own line stays before the item that
//!   follows it, one at the end of an item's last line stays there, and one
//!   inside a multi-line item moves before that item.
//! - At most one blank line between items, as written; none after `{` or
//!   before `}`; exactly one between policies.
//!
//! Formatting is idempotent and keeps the meaning: the output parses to the
//! same policies. A file with syntax errors is not formatted, and the
//! result is checked to hold every token of the input (bar `;`, doubled
//! `not`s and empty `ignore` lists) before it is returned.

mod comments;
mod layout;
mod rules;

#[cfg(test)]
mod meaning;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::diagnostics::{Diagnostic, SourceFile};
use crate::syntax::{self, Span};
use comments::{scan, Token};

/// Lines longer than this are wrapped.
pub const WIDTH: usize = 100;
const INDENT: &str = "  ";

/// Why a file was not formatted.
#[derive(Debug)]
#[non_exhaustive]
pub enum FmtError {
    /// The file has syntax errors: nothing is changed.
    Syntax(Vec<Diagnostic>),
    /// The formatter would have lost or changed text (a bug, or text the
    /// parser skipped): nothing is changed.
    Unsafe(String),
}

/// One thing the formatter emits: an opening or closing line or an item,
/// with where it is in the source.
struct Node {
    start: usize,
    /// Just after its last token.
    end: usize,
    depth: usize,
    lines: Vec<String>,
    close: bool,
    open: bool,
    leading: Vec<Span>,
    trailing: Option<Span>,
}

struct Fmt<'a> {
    text: &'a str,
    comments: Vec<Span>,
}

impl<'a> Fmt<'a> {
    fn slice(&self, span: Span) -> &'a str {
        self.text.get(span.start..span.end).unwrap_or_default()
    }

    fn in_comment(&self, pos: usize) -> Option<Span> {
        self.comments
            .iter()
            .find(|c| c.start <= pos && pos < c.end)
            .copied()
    }

    /// Just after the last token of a span (skipping trailing blanks and
    /// comments that a grammar rule's span may include).
    fn trim_end(&self, span: Span) -> usize {
        let bytes = self.text.as_bytes();
        let mut end = span.end.min(bytes.len());
        while end > span.start {
            if let Some(c) = self.in_comment(end - 1) {
                end = c.start;
                continue;
            }
            if bytes[end - 1].is_ascii_whitespace() || bytes[end - 1] == b';' {
                end -= 1;
                continue;
            }
            break;
        }
        end
    }

    /// The first `{` at or after `pos` outside comments.
    fn brace_after(&self, mut pos: usize) -> usize {
        let bytes = self.text.as_bytes();
        while pos < bytes.len() {
            if let Some(c) = self.in_comment(pos) {
                pos = c.end;
                continue;
            }
            if bytes[pos] == b'{' {
                return pos + 1;
            }
            pos += 1;
        }
        pos
    }
}

/// The tokens that must survive formatting, counted.
fn token_counts(text: &str) -> BTreeMap<Token, isize> {
    let mut counts = BTreeMap::new();
    for t in scan(text).tokens {
        let skip = match &t {
            Token::Punct(c) => matches!(c, ';' | '(' | ')' | '[' | ']' | ',' | ':'),
            Token::Word(w) => w == "not" || w == "ignore",
            _ => false,
        };
        if !skip {
            *counts.entry(t).or_insert(0) += 1;
        }
    }
    counts
}

/// The comments of a text, trimmed.
fn comment_texts(text: &str) -> Vec<String> {
    scan(text)
        .comments
        .iter()
        .map(|c| text[c.start..c.end].trim_end().to_string())
        .collect()
}

/// Formats one file's text; `origin` names it in diagnostics.
pub fn format(origin: &str, text: &str) -> Result<String, FmtError> {
    let source = SourceFile::new(origin, text);
    let (file, diagnostics) = syntax::parse(&source);
    if !diagnostics.is_empty() {
        return Err(FmtError::Syntax(diagnostics));
    }
    let fmt = Fmt {
        text,
        comments: scan(text).comments,
    };
    let out = fmt.render(fmt.nodes(&file));
    check_safe(origin, &file, text, &out)?;
    Ok(out)
}

/// Each policy's entries, by kind: what the text's layout must not change.
fn entries(file: &syntax::File) -> Vec<Vec<&'static str>> {
    file.policies
        .iter()
        .map(|p| {
            p.items
                .iter()
                .map(|i| match i {
                    syntax::Item::Setting(_) => "setting",
                    syntax::Item::Tools(_) => "tools",
                    syntax::Item::Rule(_) => "rule",
                    syntax::Item::Limit(_) => "limit",
                    syntax::Item::Let(_) => "let",
                })
                .collect()
        })
        .collect()
}

fn check_safe(
    origin: &str,
    parsed: &syntax::File,
    before: &str,
    after: &str,
) -> Result<(), FmtError> {
    let reparsed: Arc<SourceFile> = SourceFile::new(origin, after);
    let (again, diagnostics) = syntax::parse(&reparsed);
    if let Some(d) = diagnostics.first() {
        return Err(FmtError::Unsafe(format!(
            "the formatted text would not parse ({}); the file is left as it is",
            d.message
        )));
    }
    // A `;` can be all that ends an entry whose next one starts with an
    // unknown word (`when args.file; panside "/x"`): on a new line without
    // it, the two would read as one.
    if entries(parsed) != entries(&again) {
        return Err(FmtError::Unsafe(
            "formatting would join or split entries (a `;` between them matters here); run `mcppol check` and fix what it reports first".into(),
        ));
    }
    let (mut b, a) = (token_counts(before), token_counts(after));
    for (t, n) in &a {
        *b.entry(t.clone()).or_insert(0) -= n;
    }
    // `not not X` is `X`: only an even number of `not`s may go, and
    // `tainted(ignore: [])` is `tainted`.
    if let Some((t, _)) = b.iter().find(|(_, n)| **n != 0) {
        return Err(FmtError::Unsafe(format!(
            "formatting would change `{t:?}`: the parser skipped part of the file; run `mcppol check` and fix what it reports first"
        )));
    }
    let (mut cb, mut ca) = (comment_texts(before), comment_texts(after));
    cb.sort();
    ca.sort();
    if cb != ca {
        return Err(FmtError::Unsafe(
            "formatting would lose a comment; the file is left as it is".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `fmt` fuzz target: without the `;`, the unknown word
    /// after a selector read as a test, and formatting twice differed.
    #[test]
    fn a_semicolon_that_separates_entries_is_not_lost() {
        let text =
            "policy p {\n  allow \"claude/Edit\" when args.file;panside \"$CWD/../shared\"\n}\n";
        match format("t.mcppol", text) {
            Err(FmtError::Unsafe(m)) => assert!(m.contains("join or split entries"), "{m}"),
            other => panic!("{other:?}"),
        }
        // Where the `;` does not matter, it still goes.
        assert_eq!(
            f("policy p { deny \"a/b\"; allow \"c/d\" when args.x == 1; default deny }"),
            "policy p {\n  deny \"a/b\"\n  allow \"c/d\" when args.x == 1\n  default deny\n}\n"
        );
    }

    fn f(text: &str) -> String {
        match format("t.mcppol", text) {
            Ok(s) => s,
            Err(FmtError::Syntax(d)) => panic!("syntax: {d:?}"),
            Err(FmtError::Unsafe(m)) => panic!("unsafe: {m}"),
        }
    }

    #[test]
    fn layout_basics() {
        let out = f("policy p{default deny;deny \"a/b\",\"c\" when not(args.x>1 or tainted)}");
        assert_eq!(
            out,
            "policy p {\n  default deny\n  deny \"a/b\", \"c\" when not (args.x > 1 or tainted)\n}\n"
        );
        assert_eq!(f(&out), out);
    }

    #[test]
    fn comments_stay() {
        let text = "# top\n\npolicy p { # open\n  # lead\n  deny \"a\" # trail\n    when tainted # inner\n  # last\n} # end\n# tail\n";
        let out = f(text);
        assert_eq!(f(&out), out, "{out}");
        for c in [
            "# top", "# open", "# lead", "# trail", "# inner", "# last", "# end", "# tail",
        ] {
            assert!(out.contains(c), "{c} in {out}");
        }
    }
}
