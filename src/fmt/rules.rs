//! The text of one item: targets, conditions (wrapped to the width) and
//! whole rules.

use crate::syntax::keywords::{
    Budget, Clause, KindWord, Logic, Predicate, ShellWord, TaintedArg, TestWord,
};
use crate::syntax::{Cond, LimitAst, RuleAst, Span, TargetAst, TargetKind};

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
                .join(&format!(" {} ", Logic::Or)),
            Cond::And(parts, _) => parts
                .iter()
                .map(|p| self.operand(p))
                .collect::<Vec<_>>()
                .join(&format!(" {} ", Logic::And)),
            Cond::Not(inner, _) => match &**inner {
                Cond::Bare(_) | Cond::Tainted { .. } => {
                    format!("{} {}", Logic::Not, self.cond(inner))
                }
                _ => format!("{} ({})", Logic::Not, self.cond(inner)),
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

    fn leaf(&self, c: &Cond) -> String {
        match c {
            Cond::Tainted {
                ignore,
                by,
                span: _,
            } => {
                let list = |servers: &[crate::syntax::Spanned<String>]| {
                    servers
                        .iter()
                        .map(|s| self.slice(s.span))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                match (by, ignore.is_empty()) {
                    (Some(by), _) => {
                        format!("{}({}: [{}])", Predicate::Tainted, TaintedArg::By, list(by))
                    }
                    (None, true) => Predicate::Tainted.to_string(),
                    (None, false) => format!(
                        "{}({}: [{}])",
                        Predicate::Tainted,
                        TaintedArg::Ignore,
                        list(ignore)
                    ),
                }
            }
            Cond::Exists { selector, .. } => {
                format!("{} {}", Predicate::Exists, self.slice(selector.span))
            }
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
                "{} {} {}",
                self.slice(selector.span),
                TestWord::In,
                normalize_literal(self.slice(list.span))
            ),
            Cond::Matches {
                selector, regex, ..
            } => format!(
                "{} {} {}",
                self.slice(selector.span),
                TestWord::Matches,
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
                if *inside {
                    TestWord::Inside
                } else {
                    TestWord::Escapes
                },
                self.slice(root.span)
            ),
            Cond::Runs {
                selector,
                only,
                list,
                ..
            } => format!(
                "{} {}{} {}",
                self.slice(selector.span),
                ShellWord::Runs,
                if *only {
                    format!(" {}", ShellWord::Only)
                } else {
                    String::new()
                },
                normalize_literal(self.slice(*list))
            ),
            Cond::Writes { selector, root, .. } => format!(
                "{} {} {} {}",
                self.slice(selector.span),
                ShellWord::Writes,
                TestWord::Inside,
                self.slice(root.span)
            ),
            // A form only kept to be reported (the compiler refuses it, so
            // `fmt` never writes it back), and the connectives `cond`
            // handles before calling this: as written, spacing normalized.
            other @ (Cond::UnknownTest { .. } | Cond::Or(..) | Cond::And(..) | Cond::Not(..)) => {
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
            TargetKind::Resource => head.push_str(&format!(" {}", KindWord::Resource)),
            TargetKind::Prompt => head.push_str(&format!(" {}", KindWord::Prompt)),
        }
        let targets: Vec<String> = rule.targets.iter().map(|t| self.target(t)).collect();
        let clause = rule.condition.as_ref().map(|c| {
            (
                if c.unless {
                    Clause::Unless.as_str()
                } else {
                    Clause::When.as_str()
                },
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
                Cond::Or(parts, _) => (Logic::Or.as_str(), parts),
                Cond::And(parts, _) => (Logic::And.as_str(), parts),
                _ => ("", &Vec::new()),
            };
            if line.len() <= WIDTH || parts.is_empty() {
                lines.push(line);
            } else {
                for (i, part) in parts.iter().enumerate() {
                    let part = if op == Logic::Or.as_str() {
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

    /// `limit ID: TARGET, ... COUNT per UNIT [per SCOPE]`: the targets
    /// wrapped as a rule's are, the window after the last one.
    pub(super) fn limit(&self, limit: &LimitAst, depth: usize) -> Vec<String> {
        let indent = INDENT.repeat(depth);
        let mut head = format!("{indent}{}", Budget::Limit.as_str());
        if let Some(id) = &limit.id {
            head.push_str(&format!(" {}:", id.node));
        }
        let per = Budget::Per.as_str();
        let mut tail = format!("{} {per} {}", limit.count.node, limit.unit.node);
        if let Some(scope) = &limit.scope {
            tail.push_str(&format!(" {per} {}", scope.node));
        }
        let mut targets: Vec<String> = limit.targets.iter().map(|t| self.target(t)).collect();
        if let Some(last) = targets.last_mut() {
            last.push(' ');
            last.push_str(&tail);
        }
        self.wrap_list(head, &targets, depth * 2 + 2)
    }
}
