//! The text of one item: targets, conditions (wrapped to the width) and
//! whole rules.

use crate::syntax::{Cond, RuleAst, Span, TargetAst, TargetKind};

use super::comments::{collapse_blanks, normalize_literal};
use super::{Fmt, INDENT, WIDTH};

impl<'a> Fmt<'a> {
    pub(super) fn target(&self, t: &TargetAst) -> String {
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
    pub(super) fn wrap_list(&self, first: String, items: &[String], cont: usize) -> Vec<String> {
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

    pub(super) fn rule(&self, rule: &RuleAst, depth: usize) -> Vec<String> {
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
}
