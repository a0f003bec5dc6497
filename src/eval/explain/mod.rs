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
    let steps = recorder.steps;
    let not_considered = count_not_considered(policy, request.kind, &steps);
    Explanation {
        policy: policy.name.clone(),
        steps,
        not_considered,
        decision,
        roots: policy.setting_spans.roots,
    }
}

/// Rules of the request's kind that no step names: the decision was made
/// before them.
fn count_not_considered(policy: &Policy, kind: TargetKind, steps: &[ExplainStep]) -> usize {
    if steps.is_empty() {
        return 0;
    }
    let total = policy.all_rules().filter(|r| r.kind == kind).count();
    let seen = steps.iter().filter(|s| s.rule_id.is_some()).count();
    total.saturating_sub(seen)
}
