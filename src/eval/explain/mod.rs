//! Why a request gets its decision: every rule the decision procedure
//! considers, in its order (scope, visibility, deny, pin, ask, allow,
//! default), which matched and which did not and why, ending with the
//! decision.
//!
//! This walks the rules itself, in file order, with each target's own
//! matcher; [`super::decide`] uses the target indexes and keeps no trace, so
//! explaining costs the hot path nothing. Tests check that both always
//! agree.

mod predicates;
mod render;
mod settings;
mod trace;
mod walk;

use crate::eval::Request;
use crate::policy::Policy;
use crate::syntax::TargetKind;

pub use trace::*;

use settings::SettingSpans;
use walk::Walk;

/// Explains one request. To explain many against one policy, build an
/// [`Explainer`] once.
pub fn explain(policy: &Policy, request: &Request<'_>) -> Explanation {
    Explainer::new(policy).explain(request)
}

/// Explains requests against one policy (finds where its settings are
/// written once).
pub struct Explainer<'p> {
    policy: &'p Policy,
    settings: SettingSpans,
}

impl<'p> Explainer<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Explainer {
            policy,
            settings: SettingSpans::of(policy),
        }
    }

    /// Explains one request.
    pub fn explain(&self, request: &Request<'_>) -> Explanation {
        let policy = self.policy;
        let mut ex = Walk {
            policy,
            request,
            settings_ast: &self.settings,
            steps: Vec::new(),
        };
        let decision = ex.run();
        let decided_at = ex.steps.last().map(|s| s.stage);
        let not_considered = count_not_considered(policy, request.kind, decided_at, &ex.steps);
        Explanation {
            policy: policy.name.clone(),
            steps: ex.steps,
            not_considered,
            decision,
            roots: self.settings.roots,
        }
    }
}

fn count_not_considered(
    policy: &Policy,
    kind: TargetKind,
    decided_at: Option<Stage>,
    steps: &[ExplainStep],
) -> usize {
    let total = policy.all_rules().filter(|r| r.kind == kind).count();
    let seen = steps.iter().filter(|s| s.rule_id.is_some()).count();
    match decided_at {
        Some(_) => total.saturating_sub(seen),
        None => 0,
    }
}
