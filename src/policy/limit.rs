//! Budgets: `limit ID: TARGET, ... N per UNIT [per principal|session]`.
//!
//! A budget never decides by itself in the pure engine (it holds no
//! counters): the enforcement points ask a [`crate::Budgets`] store about
//! the budgets that match a call (`crate::budget`).

use smol_str::SmolStr;

use super::Target;
use crate::model::Span;

/// The most calls one window of a budget may hold.
pub const MAX_LIMIT_COUNT: u64 = 1_000_000_000;

/// Whom one counter of a budget counts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetScope {
    /// One counter shared by every caller.
    Everyone,
    /// One counter per principal (calls made without one share one).
    Principal,
    /// One counter per session (calls made without one share one).
    Session,
}

impl BudgetScope {
    /// The word as written after the window (`per principal`); `everyone`
    /// when none is written.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetScope::Everyone => "everyone",
            BudgetScope::Principal => "principal",
            BudgetScope::Session => "session",
        }
    }
}

/// One budget.
#[derive(Debug, Clone)]
pub struct Limit {
    /// The id written in the file, or `limit:<index>`.
    pub id: SmolStr,
    /// Its targets, matched loosely (as deny and ask rules are): a budget
    /// only ever takes calls away.
    pub targets: Vec<Target>,
    /// How many allowed calls one window holds.
    pub count: u64,
    /// The window's length in seconds (1, 60, 3600 or 86400).
    pub window: u64,
    /// The window's unit as written (`hour`).
    pub unit: &'static str,
    /// Whom each counter counts for.
    pub scope: BudgetScope,
    /// Where it is written.
    pub span: Span,
    /// The 1-based line it starts on.
    pub line: u32,
}

impl Limit {
    /// Whether a tool call to `server`/`tool` counts against this budget.
    pub fn matches(&self, server: &str, tool: &str) -> bool {
        let (server_f, tool_f) = (super::names::fold(server), super::names::fold(tool));
        self.targets
            .iter()
            .any(|t| t.matches(&server_f, &tool_f, tool))
    }

    /// `20 per hour per principal`: the budget as written after its targets.
    pub fn window_text(&self) -> String {
        match self.scope {
            BudgetScope::Everyone => format!("{} per {}", self.count, self.unit),
            scope => format!("{} per {} per {}", self.count, self.unit, scope.as_str()),
        }
    }
}
