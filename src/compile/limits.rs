//! Budgets (`limit ...`): the count, the window and whom it counts for,
//! checked and compiled; targets as deny and ask rules have them (loose).

use smol_str::SmolStr;

use super::Compiler;
use crate::diagnostics::{codes, did_you_mean, Diagnostic};
use crate::policy::{BudgetScope, Limit, MAX_LIMIT_COUNT};
use crate::syntax::keywords::{LimitScope, LimitUnit};
use crate::syntax::{LimitAst, Span, Spanned};

impl<'f> Compiler<'_, 'f> {
    /// Compiles budget `number` of its policy, or reports every problem of
    /// it and gives `None`.
    pub(super) fn limit(&mut self, ast: &'f LimitAst, number: usize) -> Option<Limit> {
        let mut targets = Vec::with_capacity(ast.targets.len());
        let mut failed = false;
        for t in &ast.targets {
            match self.target(t, true) {
                Some((target, _)) => targets.push(target),
                None => failed = true,
            }
        }
        let count = self.limit_count(&ast.count);
        let unit = self.limit_unit(&ast.unit);
        let scope = match &ast.scope {
            None => Some(BudgetScope::Everyone),
            Some(word) => self.limit_scope(word),
        };
        let (Some(count), Some(unit), Some(scope)) = (count, unit, scope) else {
            return None;
        };
        if failed {
            return None;
        }
        let id = match &ast.id {
            Some(id) => SmolStr::new(id.node.as_str()),
            None => SmolStr::new(format!("limit:{number}")),
        };
        Some(Limit {
            id,
            targets,
            count,
            window: unit.seconds(),
            unit: unit.as_str(),
            scope,
            span: ast.span,
            line: self.line_of(ast.span),
        })
    }

    fn bad_limit(&mut self, span: Span, message: String, label: &'static str, help: String) {
        self.push(
            Diagnostic::error(self.source, codes::COMPILE_BAD_LIMIT, span, message)
                .with_label(label)
                .with_help(help),
        );
    }

    fn limit_count(&mut self, count: &Spanned<String>) -> Option<u64> {
        let text = count.node.as_str();
        let whole =
            text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
        if !whole {
            self.bad_limit(
                count.span,
                format!("`{text}` is not a count of calls"),
                "not a whole number",
                "write how many calls a window holds as a whole number: `20 per hour`".into(),
            );
            return None;
        }
        match text.parse::<u64>() {
            Ok(n) if n <= MAX_LIMIT_COUNT => Some(n),
            _ => {
                self.bad_limit(
                    count.span,
                    format!("a budget holds at most {MAX_LIMIT_COUNT} calls a window"),
                    "too many",
                    "write a smaller count, or no `limit` at all: a budget this large never binds"
                        .into(),
                );
                None
            }
        }
    }

    fn limit_unit(&mut self, word: &Spanned<String>) -> Option<LimitUnit> {
        if let Some(unit) = LimitUnit::from_name(&word.node) {
            return Some(unit);
        }
        let units = LimitUnit::names().collect::<Vec<_>>().join("`, `");
        let help = if LimitScope::from_name(&word.node).is_some() {
            format!(
                "write the window first: `per hour per {}` (windows: `{units}`)",
                word.node
            )
        } else {
            match did_you_mean(&word.node, LimitUnit::names()) {
                Some(near) => format!("did you mean `{near}`? A window is one of `{units}`"),
                None => format!("a window is one of `{units}`"),
            }
        };
        self.bad_limit(
            word.span,
            format!("`{}` is not a window", word.node),
            "not a window",
            help,
        );
        None
    }

    fn limit_scope(&mut self, word: &Spanned<String>) -> Option<BudgetScope> {
        match LimitScope::from_name(&word.node) {
            Some(LimitScope::Principal) => return Some(BudgetScope::Principal),
            Some(LimitScope::Session) => return Some(BudgetScope::Session),
            None => {}
        }
        let help = match did_you_mean(&word.node, LimitScope::names()) {
            Some(near) => format!(
                "did you mean `per {near}`? A budget counts per `principal`, per `session`, or (without this) for everyone together"
            ),
            None => "a budget counts per `principal`, per `session`, or (without this) for everyone together".into(),
        };
        self.bad_limit(
            word.span,
            format!("`{}` is not whom a budget counts for", word.node),
            "not `principal` or `session`",
            help,
        );
        None
    }
}
