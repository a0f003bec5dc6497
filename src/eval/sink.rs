//! What the decision procedure tells an observer as it runs: the one
//! procedure serves both [`super::decide`] and `explain`.
//!
//! Deciding passes `()`, whose methods are all empty and whose
//! [`Sink::ON`] is `false`: every call compiles to nothing and the work
//! done only for an observer (reporting the rules the index skipped,
//! walking on after a quantifier is decided) is behind `if S::ON`, a
//! constant. `explain` passes a recorder (`explain::record`) that turns
//! each call into a step or a note.

use serde_json::Value;

use super::{Facts, Refused, Request, Tri, Verdict};
use crate::fingerprint::ToolApproval;
use crate::policy::{Hits, Policy, Pred, Rule, Shown};

/// One place a selector reached, as a predicate tested it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reached<'v> {
    /// A value, and the test's result on it.
    Value(&'v Value, Tri),
    /// A step found nothing.
    Missing,
    /// Lists nested deeper than the evaluator searches.
    TooDeep,
}

/// What a host predicate did.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HostCall<'a> {
    /// No predicate of that name is registered.
    Unregistered,
    /// It returned a value.
    Returned(bool),
    /// It returned an error.
    Failed(&'a str),
    /// It panicked.
    Panicked,
}

/// How a rule the procedure looked at came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleSeen {
    /// Its condition, once a target matched.
    Condition(Tri),
    /// No target names the request (the index did not offer it).
    NoTarget,
    /// A target matches, but none exactly, and the tool is new.
    SkippedNew,
}

/// An observer of the decision procedure. Every method does nothing by
/// default.
#[allow(unused_variables)]
pub(crate) trait Sink {
    /// Whether anything is recorded: `false` lets the compiler drop the
    /// observer-only work.
    const ON: bool;

    /// The request is refused before any rule (`bad_server`, `bad_uri`).
    fn refused(&mut self, policy: &Policy, request: &Request<'_>, refused: &Refused) {}
    /// The policy's scope leaves the request's kind out.
    fn out_of_scope(&mut self, policy: &Policy, request: &Request<'_>) {}
    /// A resource's URI, as rules match it.
    fn normalized(&mut self, policy: &Policy, request: &Request<'_>, name: &str) {}
    /// The `tools {}` block's verdict; `hits` holds the deciding patterns.
    fn visibility(&mut self, policy: &Policy, request: &Request<'_>, shown: Shown, hits: &Hits) {}
    /// What-if: the result to take for `rule`'s condition instead of
    /// evaluating it (`None`: evaluate it). `table` forces the conditions
    /// a bare call cannot settle, to walk each outcome through this one
    /// procedure.
    fn assumed(&mut self, rule: &Rule, facts: &Facts<'_>) -> Option<Tri> {
        None
    }
    /// A rule of the deny, ask or allow list, in file order.
    fn rule(&mut self, rule: &Rule, seen: RuleSeen) {}
    /// The approved-fingerprint stage, for a tool. For a changed tool it
    /// comes once the later stages are known: `decides` when one of them
    /// would ask or allow (the pin then decides), not when only a `deny`
    /// default would decide (the pin only tightens).
    fn pin(&mut self, policy: &Policy, approval: ToolApproval, approver: bool, decides: bool) {}
    /// No rule decided.
    fn default(&mut self, policy: &Policy, verdict: Verdict) {}

    /// How many predicate notes are kept so far (a mark for `cut`).
    fn mark(&self) -> usize {
        0
    }
    /// Drops the notes from `from` up to `to`: those of the parts of an
    /// `and`/`or` that did not make it come out as it did.
    fn cut(&mut self, from: usize, to: usize) {}
    /// A selector reached a place; the predicate's note is next.
    fn reached(&mut self, reached: Reached<'_>) {}
    /// A host predicate was called.
    fn host(&mut self, call: HostCall<'_>) {}
    /// A predicate came out as `result`.
    fn predicate(&mut self, pred: &Pred, result: Tri, facts: &Facts<'_>) {}
}

/// Deciding: nothing is recorded.
impl Sink for () {
    const ON: bool = false;
}
