//! Why a request gets its decision: every rule the decision procedure
//! considers, in its order (request, scope, visibility, deny, pin, ask,
//! allow, default), which matched and which did not and why, ending with
//! the decision.
//!
//! Explaining runs the decision procedure itself ([`crate::eval::run`])
//! with a recorder as its sink (`record.rs`); deciding runs it with `()`,
//! for which the recording compiles to nothing. The rules the target index
//! does not offer are reported as not matching, in file order.

mod record;
mod render;
mod trace;

use crate::eval::{run, Request};
use crate::policy::Policy;
use crate::syntax::TargetKind;

pub use trace::*;

#[cfg(feature = "cli")]
pub(crate) use record::selector;

use record::Recorder;

/// Explains one request against one policy.
pub(crate) fn explain(policy: &Policy, request: &Request<'_>) -> Explanation {
    let mut recorder = Recorder::new(policy, request);
    let decision = run(policy, request, &mut recorder).made_by(policy);
    let mut steps = recorder.steps;
    if request.kind == TargetKind::Tool && crate::budget::counts(&decision) {
        budget_steps(policy, request, &mut steps);
    }
    let not_considered = count_not_considered(policy, request.kind, &steps);
    Explanation {
        policy: policy.name.clone(),
        steps,
        not_considered,
        decision,
        roots: policy.setting_spans.roots,
    }
}

/// The budgets the call matches, after the deny steps: shown, and said
/// not to be counted here.
fn budget_steps(policy: &Policy, request: &Request<'_>, steps: &mut Vec<ExplainStep>) {
    let limits = policy.limits_for(request.server, request.name);
    if limits.is_empty() {
        return;
    }
    let at = steps
        .iter()
        .position(|s| {
            !matches!(
                s.stage,
                Stage::Request | Stage::Scope | Stage::Visibility | Stage::Deny
            )
        })
        .unwrap_or(steps.len());
    let shown = limits.into_iter().map(|limit| ExplainStep {
        stage: Stage::Limit,
        rule_id: Some(limit.id.clone()),
        span: limit.span,
        outcome: Outcome::NotCounted,
        detail: format!(
            "{}; explain holds no counters: where calls are enforced, this call is denied (limit_exceeded) once the budget is spent",
            limit.window_text()
        ),
        notes: Vec::new(),
    });
    steps.splice(at..at, shown);
}

/// Rules of the request's kind that no step names: the decision was made
/// before them.
fn count_not_considered(policy: &Policy, kind: TargetKind, steps: &[ExplainStep]) -> usize {
    if steps.is_empty() {
        return 0;
    }
    let total = policy.all_rules().filter(|r| r.kind == kind).count();
    let seen = steps
        .iter()
        .filter(|s| s.rule_id.is_some() && s.stage != Stage::Limit)
        .count();
    total.saturating_sub(seen)
}
