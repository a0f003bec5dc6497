//! The file as a list of nodes (opening and closing lines, items), and
//! the nodes rendered with their comments and blank lines.

use crate::syntax::{self, Item, PolicyAst, Span};

use super::{Fmt, Node, INDENT};

impl<'a> Fmt<'a> {
    pub(super) fn nodes(&self, file: &syntax::File) -> Vec<Node> {
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
        // The file's own `let`s and its policies, in text order.
        let mut lets = file.lets.iter().peekable();
        for policy in &file.policies {
            while let Some(l) = lets.next_if(|l| l.span.start < policy.span.start) {
                nodes.push(node(
                    l.span.start,
                    self.trim_end(l.span),
                    0,
                    vec![self.let_line(l)],
                ));
            }
            self.policy(policy, &mut nodes, &node);
        }
        for l in lets {
            nodes.push(node(
                l.span.start,
                self.trim_end(l.span),
                0,
                vec![self.let_line(l)],
            ));
        }
        nodes
    }

    /// `let NAME = VALUE`, the value's spacing normalized.
    fn let_line(&self, l: &syntax::LetAst) -> String {
        format!(
            "let {} = {}",
            l.name.node,
            super::comments::normalize_literal(self.slice(l.value.span))
        )
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
                Item::Let(l) => {
                    let lines = vec![format!("{INDENT}{}", self.let_line(l))];
                    nodes.push(node(l.span.start, self.trim_end(l.span), 1, lines));
                }
                Item::Setting(s) => {
                    let values: Vec<&str> = s.values.iter().map(|v| self.slice(v.span)).collect();
                    let lines = vec![format!("{INDENT}{} {}", s.name.node, values.join(", "))];
                    nodes.push(node(s.span.start, self.trim_end(s.span), 1, lines));
                }
                Item::Rule(r) => {
                    let lines = self.rule(r, 1);
                    nodes.push(node(r.span.start, self.trim_end(r.span), 1, lines));
                }
                Item::Limit(l) => {
                    let lines = self.limit(l, 1);
                    nodes.push(node(l.span.start, self.trim_end(l.span), 1, lines));
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

    pub(super) fn render(&self, mut nodes: Vec<Node>) -> String {
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
