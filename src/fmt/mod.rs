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

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::diagnostics::{Diagnostic, SourceFile};
use crate::syntax::{self, Cond, Item, PolicyAst, RuleAst, Span, TargetAst, TargetKind};
use comments::{collapse_blanks, normalize_literal, scan, Token};

/// Lines longer than this are wrapped.
pub const WIDTH: usize = 100;
const INDENT: &str = "  ";

/// Why a file was not formatted.
#[derive(Debug)]
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

    fn target(&self, t: &TargetAst) -> String {
        match t {
            TargetAst::Any(_) => "*".into(),
            TargetAst::Pattern(p) => self.slice(p.span).to_string(),
            TargetAst::Regex { server, regex, .. } => {
                format!("{} ~ {}", self.slice(server.span), self.slice(regex.span))
            }
        }
    }

    fn cond(&self, c: &Cond) -> String {
        match c {
            Cond::Or(parts, _) => parts
                .iter()
                .map(|p| match p {
                    Cond::Or(..) => format!("({})", self.cond(p)),
                    _ => self.cond(p),
                })
                .collect::<Vec<_>>()
                .join(" or "),
            Cond::And(parts, _) => parts
                .iter()
                .map(|p| self.operand(p))
                .collect::<Vec<_>>()
                .join(" and "),
            Cond::Not(inner, _) => match &**inner {
                Cond::Bare(_) | Cond::Tainted { .. } => format!("not {}", self.cond(inner)),
                _ => format!("not ({})", self.cond(inner)),
            },
            _ => self.leaf(c),
        }
    }

    /// A condition as an operand of `and` or `not`: `or` and `and` in
    /// parentheses.
    fn operand(&self, c: &Cond) -> String {
        match c {
            Cond::Or(..) | Cond::And(..) => format!("({})", self.cond(c)),
            _ => self.cond(c),
        }
    }

    #[allow(unreachable_patterns)]
    fn leaf(&self, c: &Cond) -> String {
        match c {
            Cond::Tainted { ignore, .. } if ignore.is_empty() => "tainted".into(),
            Cond::Tainted { ignore, .. } => format!(
                "tainted(ignore: [{}])",
                ignore
                    .iter()
                    .map(|s| self.slice(s.span))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Cond::Exists { selector, .. } => format!("exists {}", self.slice(selector.span)),
            Cond::Bare(selector) => self.slice(selector.span).to_string(),
            Cond::Compare {
                selector,
                op,
                value,
                ..
            } => format!(
                "{} {} {}",
                self.slice(selector.span),
                op.node.as_str(),
                normalize_literal(self.slice(value.span))
            ),
            Cond::In { selector, list, .. } => format!(
                "{} in {}",
                self.slice(selector.span),
                normalize_literal(self.slice(list.span))
            ),
            Cond::Matches {
                selector, regex, ..
            } => format!(
                "{} matches {}",
                self.slice(selector.span),
                self.slice(regex.span)
            ),
            Cond::Path {
                selector,
                inside,
                root,
                ..
            } => format!(
                "{} {} {}",
                self.slice(selector.span),
                if *inside { "inside" } else { "escapes" },
                self.slice(root.span)
            ),
            // Anything else (a form only kept to be reported): as written,
            // spacing normalized.
            other => {
                let span = Span::new(other.span().start, self.trim_end(other.span()));
                collapse_blanks(self.slice(span))
            }
        }
    }

    /// `HEAD t1, t2, ...` wrapped at the width: further lines indented
    /// `cont` spaces.
    fn wrap_list(&self, first: String, items: &[String], cont: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let mut line = first;
        for (i, item) in items.iter().enumerate() {
            let last = i + 1 == items.len();
            let sep = if i == 0 { " " } else { ", " };
            let extra = if last { 0 } else { 1 };
            if i > 0 && line.len() + sep.len() + item.len() + extra > WIDTH {
                line.push(',');
                lines.push(line);
                line = format!("{}{item}", " ".repeat(cont));
            } else {
                line.push_str(sep);
                line.push_str(item);
            }
        }
        lines.push(line);
        lines
    }

    fn rule(&self, rule: &RuleAst, depth: usize) -> Vec<String> {
        let indent = INDENT.repeat(depth);
        let mut head = format!("{indent}{}", rule.effect.node.as_str());
        if let Some(id) = &rule.id {
            head.push_str(&format!(" {}:", id.node));
        }
        match rule.kind {
            TargetKind::Tool => {}
            TargetKind::Resource => head.push_str(" resource"),
            TargetKind::Prompt => head.push_str(" prompt"),
        }
        let targets: Vec<String> = rule.targets.iter().map(|t| self.target(t)).collect();
        let clause = rule.condition.as_ref().map(|c| {
            (
                if c.unless { "unless" } else { "when" },
                &c.condition,
                self.cond(&c.condition),
            )
        });
        let one = format!(
            "{head} {}{}",
            targets.join(", "),
            clause
                .as_ref()
                .map(|(kw, _, text)| format!(" {kw} {text}"))
                .unwrap_or_default()
        );
        if one.len() <= WIDTH {
            return vec![one];
        }
        let cont = depth * 2 + 2;
        let mut lines = self.wrap_list(head, &targets, cont);
        if let Some((kw, cond, text)) = clause {
            let line = format!("{}{kw} {text}", " ".repeat(cont));
            let (op, parts) = match cond {
                Cond::Or(parts, _) => ("or", parts),
                Cond::And(parts, _) => ("and", parts),
                _ => ("", &Vec::new()),
            };
            if line.len() <= WIDTH || parts.is_empty() {
                lines.push(line);
            } else {
                for (i, part) in parts.iter().enumerate() {
                    let part = if op == "or" {
                        match part {
                            Cond::Or(..) => format!("({})", self.cond(part)),
                            _ => self.cond(part),
                        }
                    } else {
                        self.operand(part)
                    };
                    if i == 0 {
                        lines.push(format!("{}{kw} {part}", " ".repeat(cont)));
                    } else {
                        lines.push(format!("{}{op} {part}", " ".repeat(cont + 2)));
                    }
                }
            }
        }
        lines
    }

    fn nodes(&self, file: &syntax::File) -> Vec<Node> {
        let mut nodes = Vec::new();
        let node = |start: usize, end: usize, depth: usize, lines: Vec<String>| Node {
            start,
            end,
            depth,
            lines,
            close: false,
            open: false,
            leading: Vec::new(),
            trailing: None,
        };
        for policy in &file.policies {
            self.policy(policy, &mut nodes, &node);
        }
        nodes
    }

    fn policy(
        &self,
        policy: &PolicyAst,
        nodes: &mut Vec<Node>,
        node: &dyn Fn(usize, usize, usize, Vec<String>) -> Node,
    ) {
        let open_end = self.brace_after(policy.name.span.end);
        let mut open = node(
            policy.span.start,
            open_end,
            0,
            vec![format!("policy {} {{", policy.name.node)],
        );
        open.open = true;
        nodes.push(open);
        for item in &policy.items {
            match item {
                Item::Setting(s) => {
                    let values: Vec<&str> = s.values.iter().map(|v| self.slice(v.span)).collect();
                    let lines = vec![format!("{INDENT}{} {}", s.name.node, values.join(", "))];
                    nodes.push(node(s.span.start, self.trim_end(s.span), 1, lines));
                }
                Item::Rule(r) => {
                    let lines = self.rule(r, 1);
                    nodes.push(node(r.span.start, self.trim_end(r.span), 1, lines));
                }
                Item::Tools(block) => {
                    let open_end = self.brace_after(block.span.start);
                    let mut open = node(
                        block.span.start,
                        open_end,
                        1,
                        vec![format!("{INDENT}tools {{")],
                    );
                    open.open = true;
                    nodes.push(open);
                    for entry in &block.entries {
                        let word = if entry.include { "include" } else { "exclude" };
                        let targets: Vec<String> =
                            entry.targets.iter().map(|t| self.target(t)).collect();
                        let lines = self.wrap_list(format!("{INDENT}{INDENT}{word}"), &targets, 8);
                        nodes.push(node(entry.span.start, self.trim_end(entry.span), 2, lines));
                    }
                    let end = self.trim_end(block.span);
                    let mut close =
                        node(end.saturating_sub(1), end, 1, vec![format!("{INDENT}}}")]);
                    close.close = true;
                    nodes.push(close);
                }
            }
        }
        let end = self.trim_end(policy.span);
        let mut close = node(end.saturating_sub(1), end, 0, vec!["}".into()]);
        close.close = true;
        nodes.push(close);
    }

    fn newlines(&self, from: usize, to: usize) -> usize {
        self.text
            .get(from.min(to)..to)
            .map_or(0, |s| s.bytes().filter(|b| *b == b'\n').count())
    }

    fn comment_text(&self, c: Span) -> &'a str {
        self.slice(c).trim_end()
    }

    fn render(&self, mut nodes: Vec<Node>) -> String {
        let mut tail: Vec<Span> = Vec::new();
        for &c in &self.comments {
            let i = nodes.iter().rposition(|n| n.start <= c.start);
            match i {
                None => match nodes.first_mut() {
                    Some(n) => n.leading.push(c),
                    None => tail.push(c),
                },
                Some(i) => {
                    if c.start < nodes[i].end {
                        nodes[i].leading.push(c);
                    } else if self.newlines(nodes[i].end, c.start) == 0
                        && nodes[i].trailing.is_none()
                    {
                        nodes[i].trailing = Some(c);
                    } else if let Some(next) = nodes.get_mut(i + 1) {
                        next.leading.push(c);
                    } else {
                        tail.push(c);
                    }
                }
            }
        }
        let mut out = String::new();
        let mut prev_end: Option<usize> = None;
        let mut after_open = true;
        let mut after_top_close = false;
        let blank = |out: &mut String, prev: Option<usize>, at: usize, forced: bool| {
            if out.is_empty() {
                return;
            }
            if forced || prev.is_some_and(|p| self.newlines(p, at) >= 2) {
                out.push('\n');
            }
        };
        for n in &nodes {
            let comment_depth = if n.close { n.depth + 1 } else { n.depth };
            for &c in &n.leading {
                let forced = after_top_close;
                if !after_open || forced {
                    // A comment from inside the item counts from where the
                    // item starts.
                    blank(&mut out, prev_end, c.start.min(n.start), forced);
                }
                out.push_str(&INDENT.repeat(comment_depth));
                out.push_str(self.comment_text(c));
                out.push('\n');
                prev_end = Some(c.end);
                after_open = false;
                after_top_close = false;
            }
            let forced = after_top_close;
            if (!after_open && !n.close) || forced {
                blank(&mut out, prev_end, n.start, forced);
            }
            let count = n.lines.len();
            for (i, line) in n.lines.iter().enumerate() {
                out.push_str(line);
                if i + 1 == count {
                    if let Some(c) = n.trailing {
                        out.push_str("  ");
                        out.push_str(self.comment_text(c));
                    }
                }
                out.push('\n');
            }
            prev_end = Some(n.trailing.map_or(n.end, |c| c.end));
            after_open = n.open;
            after_top_close = n.close && n.depth == 0;
        }
        for c in tail {
            blank(&mut out, prev_end, c.start, after_top_close);
            after_top_close = false;
            out.push_str(self.comment_text(c));
            out.push('\n');
            prev_end = Some(c.end);
        }
        out
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
    check_safe(origin, text, &out)?;
    Ok(out)
}

fn check_safe(origin: &str, before: &str, after: &str) -> Result<(), FmtError> {
    let reparsed: Arc<SourceFile> = SourceFile::new(origin, after);
    let (_, diagnostics) = syntax::parse(&reparsed);
    if let Some(d) = diagnostics.first() {
        return Err(FmtError::Unsafe(format!(
            "the formatted text would not parse ({}); the file is left as it is",
            d.message
        )));
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
