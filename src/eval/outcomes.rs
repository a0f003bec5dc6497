//! What a call to a tool can come to when its decision hangs on inputs a
//! listing does not give (`mcppol table`): the arguments, taint, the
//! principal, assignments, host predicates.
//!
//! No second decision procedure: the one procedure ([`super::run`]) is run
//! with a what-if sink that evaluates every condition the listing settles
//! (annotations only) and forces each condition it cannot settle, an
//! "open" one. First every open condition is forced false: the rules the
//! procedure passes on the way are the ones a real call could stop at,
//! and where it stops is what happens otherwise. Then each of those rules
//! in turn is forced true, the others false: the decision when it is the
//! first to match.

use std::collections::BTreeSet;

use smol_str::SmolStr;

use super::condition::eval_pred;
use super::explain::selector;
use super::sink::Sink;
use super::{run, Facts, Request, Tri};
use crate::policy::{Cond, Operand, Policy, Pred, Rule, Test};
use crate::Decision;

/// One outcome: the decisions with and without an approver.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The open rule that is the first to match, or `None` for the
    /// outcome when none of them matches.
    pub when: Option<SmolStr>,
    /// The decision for a caller with an approver.
    pub with_approver: Decision,
    /// The decision for a caller without one.
    pub without_approver: Decision,
}

/// The outcomes of a request whose decision may depend on what it does
/// not say.
#[derive(Debug, Clone)]
pub(crate) struct Outcomes {
    /// What the open conditions read (`args.path`, `taint`, ...), sorted.
    pub depends_on: Vec<String>,
    /// One outcome an open rule reached, in the order the procedure
    /// reaches them, then the outcome when none of them matches (always
    /// there, and the only one when the decision is settled).
    pub cases: Vec<Outcome>,
}

impl Outcomes {
    /// Whether the request's decision is settled: no open rule is reached.
    pub fn settled(&self) -> bool {
        self.cases.len() == 1
    }
}

/// The inputs a predicate reads that a listing does not give; none for an
/// annotation, which a listing gives.
fn pred_reads(pred: &Pred, out: &mut BTreeSet<String>) {
    let operand = match &pred.test {
        Test::Tainted { .. } => {
            out.insert("taint".into());
            return;
        }
        Test::Host { name, .. } => {
            out.insert(format!("host.{name}"));
            return;
        }
        Test::Annotation(_) => return,
        Test::Exists(o) => o,
        Test::Compare { operand, .. }
        | Test::In { operand, .. }
        | Test::Matches { operand, .. }
        | Test::Inside { operand, .. }
        | Test::Escapes { operand, .. }
        | Test::Runs { operand, .. }
        | Test::WritesInside { operand, .. } => operand,
    };
    match operand {
        Operand::Args(steps) => out.insert(selector("args", steps)),
        Operand::Assigns(steps) => out.insert(selector("assigns", steps)),
        Operand::Principal => out.insert("principal".into()),
        Operand::Annotation(_) => false,
    };
}

/// What a condition reads that a listing does not give.
fn reads(cond: &Cond, out: &mut BTreeSet<String>) {
    match cond {
        Cond::And(parts) | Cond::Or(parts) => parts.iter().for_each(|p| reads(p, out)),
        Cond::Not(inner) => reads(inner, out),
        Cond::Pred(pred) => pred_reads(pred, out),
    }
}

/// A condition's result where the listing settles it, `None` where it
/// could come out either way: the predicates on annotations are evaluated
/// (by the evaluator), the others are open, and `and`, `or` and `not`
/// combine as the evaluator does (Kleene), open meaning "any of the
/// three".
fn settled(cond: &Cond, facts: &Facts<'_>) -> Option<Tri> {
    let junction = |parts: &[Cond], short: Tri, otherwise: Tri| {
        let (mut open, mut failed) = (false, false);
        for part in parts {
            match settled(part, facts) {
                Some(t) if t == short => return Some(short),
                Some(Tri::Failed) => failed = true,
                Some(_) => {}
                None => open = true,
            }
        }
        match (open, failed) {
            (true, _) => None,
            (false, true) => Some(Tri::Failed),
            (false, false) => Some(otherwise),
        }
    };
    match cond {
        Cond::Pred(pred) => {
            let mut inputs = BTreeSet::new();
            pred_reads(pred, &mut inputs);
            inputs.is_empty().then(|| eval_pred(pred, facts, &mut ()))
        }
        Cond::And(parts) => junction(parts, Tri::False, Tri::True),
        Cond::Or(parts) => junction(parts, Tri::True, Tri::False),
        Cond::Not(inner) => settled(inner, facts).map(|t| match t {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Failed => Tri::Failed,
        }),
    }
}

/// The what-if sink: open conditions are false, but for the rule `force`
/// names, true; the open rules reached are noted in order.
struct WhatIf<'a> {
    force: Option<&'a str>,
    reached: Vec<(SmolStr, BTreeSet<String>)>,
}

impl Sink for WhatIf<'_> {
    const ON: bool = true;

    fn assumed(&mut self, rule: &Rule, facts: &Facts<'_>) -> Option<Tri> {
        let cond = rule.condition.as_ref()?;
        if settled(cond, facts).is_some() {
            return None;
        }
        // Rule ids are unique in a policy, and the procedure tries a rule
        // once; the check only keeps an outcome from being listed twice.
        if !self.reached.iter().any(|(id, _)| *id == rule.id) {
            let mut inputs = BTreeSet::new();
            reads(cond, &mut inputs);
            self.reached.push((rule.id.clone(), inputs));
        }
        Some(Tri::from(self.force == Some(&*rule.id)))
    }
}

/// The decision `request` comes to with every open condition false but
/// `force`'s, and the open rules reached on the way.
fn what_if(
    policy: &Policy,
    request: &Request<'_>,
    force: Option<&str>,
) -> (Decision, Vec<(SmolStr, BTreeSet<String>)>) {
    let mut sink = WhatIf {
        force,
        reached: Vec::new(),
    };
    let decision = run(policy, request, &mut sink).made_by(policy);
    (decision, sink.reached)
}

/// What a request, made by a caller with an approver (`with`) and one
/// without (`without`, otherwise the same), can come to against `policy`,
/// its conditions on inputs it does not give left open.
pub(crate) fn outcomes(policy: &Policy, with: &Request<'_>, without: &Request<'_>) -> Outcomes {
    // Whether there is an approver only tells how a stage decides, never
    // which rules are reached: the open rules are the same for both.
    let (with_otherwise, open) = what_if(policy, with, None);
    let (without_otherwise, _) = what_if(policy, without, None);
    let mut depends_on = BTreeSet::new();
    let mut cases = Vec::with_capacity(open.len() + 1);
    for (id, inputs) in open {
        depends_on.extend(inputs);
        cases.push(Outcome {
            with_approver: what_if(policy, with, Some(&id)).0,
            without_approver: what_if(policy, without, Some(&id)).0,
            when: Some(id),
        });
    }
    let otherwise = Outcome {
        when: None,
        with_approver: with_otherwise,
        without_approver: without_otherwise,
    };
    // Open rules that all come to the otherwise decision (a changed
    // tool's pin decides whichever matches) do not make it depend.
    if cases.iter().all(|c| {
        c.with_approver == otherwise.with_approver
            && c.without_approver == otherwise.without_approver
    }) {
        cases.clear();
        depends_on.clear();
    }
    cases.push(otherwise);
    Outcomes {
        depends_on: depends_on.into_iter().collect(),
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PolicySet, Source, Verdict};

    fn policy(text: &str) -> PolicySet {
        PolicySet::from_text("p.mcppol", text).unwrap()
    }

    #[test]
    fn a_rule_without_an_open_condition_settles_the_call() {
        let set = policy(
            r#"policy p { deny "a/*" when annotation.read_only
            allow "a/x" }"#,
        );
        let p = set.pick(None).unwrap();
        let o = outcomes_of(p, "x");
        assert!(o.settled());
        assert!(o.depends_on.is_empty());
        assert_eq!(o.cases[0].when, None);
        assert_eq!(o.cases[0].with_approver.decision, Verdict::Allow);
        assert_eq!(o.cases[0].with_approver, decide_of(p, "x", true));
        assert_eq!(o.cases[0].without_approver, decide_of(p, "x", false));
    }

    fn decide_of(p: &Policy, name: &str, approver: bool) -> Decision {
        let mut request = Request::tool("a", name);
        request.has_approver = approver;
        super::super::decide(p, &request)
    }

    fn outcomes_of(p: &Policy, name: &str) -> Outcomes {
        let with = Request::tool("a", name);
        let mut without = Request::tool("a", name);
        without.has_approver = false;
        outcomes(p, &with, &without)
    }

    #[test]
    fn each_open_rule_is_an_outcome_in_procedure_order() {
        let set = policy(
            r#"policy p {
                allow safe: "a/x" when args.path inside "/srv"
                deny secret: "a/*" when args.path matches /secret/ or principal == "bob"
                ask tainted: "a/x" when tainted
                deny never: "a/*" when annotation.read_only and args.n > 1
            }"#,
        );
        let p = set.pick(None).unwrap();
        let o = outcomes_of(p, "x");
        assert!(!o.settled());
        assert_eq!(o.depends_on, ["args.path", "principal", "taint"]);
        let when: Vec<Option<&str>> = o.cases.iter().map(|c| c.when.as_deref()).collect();
        // The untrusted server's `read_only` is false: `never` is settled
        // (false) and never an outcome.
        assert_eq!(when, [Some("secret"), Some("tainted"), Some("safe"), None]);
        let verdicts: Vec<(Verdict, Verdict)> = o
            .cases
            .iter()
            .map(|c| (c.with_approver.decision, c.without_approver.decision))
            .collect();
        assert_eq!(
            verdicts,
            [
                (Verdict::Deny, Verdict::Deny),
                (Verdict::Ask, Verdict::Deny),
                (Verdict::Allow, Verdict::Allow),
                // `default ask`, the default's default.
                (Verdict::Ask, Verdict::Deny),
            ]
        );
        assert_eq!(o.cases[1].without_approver.source, Source::Ask);
        assert_eq!(o.cases[3].with_approver.source, Source::Default);
        // The bare call comes to the same as none of them matching.
        assert_eq!(o.cases[3].with_approver, decide_of(p, "x", true));
    }

    #[test]
    fn a_condition_true_for_the_bare_call_is_still_one_outcome_of_two() {
        let set = policy(
            r#"policy p { deny bare: "a/*" when not exists args.path
            allow "a/x" }"#,
        );
        let p = set.pick(None).unwrap();
        let o = outcomes_of(p, "x");
        assert_eq!(o.cases.len(), 2);
        assert_eq!(o.cases[0].with_approver, decide_of(p, "x", true));
        assert_eq!(o.cases[1].with_approver.decision, Verdict::Allow);
    }

    #[test]
    fn open_rules_that_all_come_to_the_same_decision_settle_it() {
        // A changed tool: the pin decides whether `w` or the allow matches.
        let set = policy(
            r#"policy p { pin_tools on
            ask w: "a/x" when args.force == true
            allow "a/x" }"#,
        );
        let p = set.pick(None).unwrap();
        let mut with = Request::tool("a", "x");
        with.approval = crate::fingerprint::ToolApproval::Changed;
        let mut without = with;
        without.has_approver = false;
        let o = outcomes(p, &with, &without);
        assert!(o.settled(), "{o:?}");
        assert!(o.depends_on.is_empty());
        assert_eq!(o.cases[0].with_approver.source, Source::Pin);
        assert_eq!(o.cases[0].without_approver.decision, Verdict::Deny);
    }

    #[test]
    fn an_open_part_under_a_settled_junction_is_settled() {
        // `false and open` is false, `true or open` is true: neither rule
        // depends on the argument.
        let set = policy(
            r#"policy p { trusted "a"
            deny d: "a/*" when annotation.destructive and args.x == 1
            allow ok: "a/x" when annotation.read_only or args.y == 2 }"#,
        );
        let p = set.pick(None).unwrap();
        let annotations = serde_json::json!({"readOnlyHint": true, "destructiveHint": false});
        let with = Request::tool("a", "x").with_annotations(&annotations);
        let mut without = Request::tool("a", "x").with_annotations(&annotations);
        without.has_approver = false;
        let o = outcomes(p, &with, &without);
        assert!(o.settled(), "{o:?}");
        assert_eq!(o.cases[0].with_approver.rule_id.as_deref(), Some("ok"));
    }
}
