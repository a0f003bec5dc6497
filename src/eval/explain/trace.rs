//! What an explanation is made of: stages, outcomes, steps and notes.

use std::sync::Arc;

use crate::eval::{Decision, Tri};
use crate::syntax::Span;

/// A stage of the decision procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Scope,
    Visibility,
    Deny,
    Pin,
    Ask,
    Allow,
    Default,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Scope => "scope",
            Stage::Visibility => "visibility",
            Stage::Deny => "deny",
            Stage::Pin => "pin",
            Stage::Ask => "ask",
            Stage::Allow => "allow",
            Stage::Default => "default",
        }
    }
}

/// How one step came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::PredicateFailed => "predicate_failed",
            Outcome::TargetNoMatch => "target_no_match",
            Outcome::ConditionFalse => "condition_false",
            Outcome::SkippedNewTool => "skipped_new_tool",
            Outcome::Passed => "passed",
            Outcome::Decided => "decided",
        }
    }
}

/// One predicate of a condition and what it saw.
#[derive(Debug, Clone)]
pub struct Note {
    pub span: Span,
    /// The predicate as written.
    pub text: String,
    pub result: Tri,
    /// What it saw: "`args.path` is missing", "`args.cmd` is a number (42)".
    pub saw: String,
}

/// One line of an explanation.
#[derive(Debug, Clone)]
pub struct ExplainStep {
    pub stage: Stage,
    pub rule_id: Option<Arc<str>>,
    /// Where it is written: the rule, or the setting or block that decided.
    pub span: Span,
    pub outcome: Outcome,
    pub detail: String,
    /// The predicates that made the condition come out as it did.
    pub notes: Vec<Note>,
}

/// Every step, and the decision they lead to.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub policy: String,
    pub steps: Vec<ExplainStep>,
    /// Rules not considered because the decision was made before them.
    pub not_considered: usize,
    pub decision: Decision,
    /// Where the policy's `roots` setting is written, if it has one.
    pub roots: Option<Span>,
}
