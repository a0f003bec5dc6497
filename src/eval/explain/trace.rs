//! What an explanation is made of: stages, outcomes, steps and notes.

use smol_str::SmolStr;

use crate::eval::{Decision, Tri};
use crate::syntax::Span;

/// A stage of the decision procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// The request itself: its server id, a resource's URI normalized.
    Request,
    /// Whether the policy governs this kind of request (`scope`).
    Scope,
    /// The `tools {}` block.
    Visibility,
    /// The deny rules.
    Deny,
    /// The budgets (`limit`) the call matches: shown, never counted here.
    Limit,
    /// The approved fingerprint (`pin_tools`).
    Pin,
    /// The ask rules.
    Ask,
    /// The allow rules.
    Allow,
    /// The default.
    Default,
}

impl Stage {
    /// The stage's name: `deny`, `pin`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Request => "request",
            Stage::Scope => "scope",
            Stage::Visibility => "visibility",
            Stage::Deny => "deny",
            Stage::Limit => "limit",
            Stage::Pin => "pin",
            Stage::Ask => "ask",
            Stage::Allow => "allow",
            Stage::Default => "default",
        }
    }
}

/// How one step came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The rule matched and decided.
    Matched,
    /// A predicate failed; in a deny or ask rule that is a match.
    PredicateFailed,
    /// No target of the rule names the request.
    TargetNoMatch,
    /// A target matched, the condition did not hold.
    ConditionFalse,
    /// An allow rule whose matching targets are not exact, for a new tool.
    SkippedNewTool,
    /// A stage that let the request through to the next one.
    Passed,
    /// A stage without a rule that decided (visibility, pin, default, scope).
    Decided,
    /// A budget the call matches, which an explanation cannot count (it
    /// holds no counters): an enforcement point denies the call when the
    /// budget is spent.
    NotCounted,
}

impl Outcome {
    /// The outcome's name: `matched`, `target_no_match`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::PredicateFailed => "predicate_failed",
            Outcome::TargetNoMatch => "target_no_match",
            Outcome::ConditionFalse => "condition_false",
            Outcome::SkippedNewTool => "skipped_new_tool",
            Outcome::Passed => "passed",
            Outcome::Decided => "decided",
            Outcome::NotCounted => "not_counted",
        }
    }
}

/// One predicate of a condition and what it saw.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Note {
    /// Where the predicate is written.
    pub span: Span,
    /// The predicate as written.
    pub text: String,
    /// How it came out.
    pub result: Tri,
    /// What it saw: "`args.path` is missing", "`args.cmd` is a number (42)".
    pub saw: String,
}

/// One line of an explanation.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExplainStep {
    /// The stage of the decision procedure.
    pub stage: Stage,
    /// The rule considered, for the deny, ask and allow stages.
    pub rule_id: Option<SmolStr>,
    /// Where it is written: the rule, or the setting or block that decided.
    pub span: Span,
    /// How it came out.
    pub outcome: Outcome,
    /// Why, in words.
    pub detail: String,
    /// The predicates that made the condition come out as it did.
    pub notes: Vec<Note>,
}

/// Every step, and the decision they lead to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Explanation {
    /// The policy's name.
    pub policy: String,
    /// Every step, in the order the decision procedure took them.
    pub steps: Vec<ExplainStep>,
    /// Rules not considered because the decision was made before them.
    pub not_considered: usize,
    /// The decision: always the one [`crate::Policy::decide`] gives.
    pub decision: Decision,
    /// Where the policy's `roots` setting is written, if it has one.
    pub roots: Option<Span>,
}
