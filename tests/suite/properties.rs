//! Properties of the decision procedure over random policies and requests:
//! adding a deny never widens access, rule order never changes a decision,
//! and no allow ever overrides a deny.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::{Decision, Policy, PolicySet, Request, Source, ToolApproval, Verdict};
use proptest::prelude::*;
use serde_json::{json, Value};

const TARGETS: &[&str] = &[
    r#""a/b""#,
    r#""a/*""#,
    r#""*/b""#,
    r#""b""#,
    "*",
    r#""A-B/c""#,
    r#""a" ~ /^b/"#,
    r#""?/B""#,
];
const CONDITIONS: &[&str] = &[
    "",
    " when args.n > 1",
    " when args.s matches /x/",
    " when tainted",
    " when not (args.n > 1)",
    r#" when principal == "p""#,
    r#" when args.p inside "/r""#,
    r#" when args.p escapes "/r""#,
    " when exists args.s or args.n <= 0",
];
const EFFECTS: &[&str] = &["deny", "ask", "allow"];

fn rule_text((effect, target, condition): (usize, usize, usize)) -> String {
    format!(
        "{} {}{}",
        EFFECTS[effect], TARGETS[target], CONDITIONS[condition]
    )
}

fn policy(header: &str, rules: &[String]) -> Policy {
    let text = format!("policy p {{\n{header}\n{}\n}}", rules.join("\n"));
    let set =
        PolicySet::from_text("p.mcppol", &text).unwrap_or_else(|e| panic!("{}", e.render(false)));
    (**set.pick(None).unwrap()).clone()
}

fn args_variants() -> Vec<Value> {
    vec![
        json!({}),
        json!({"n": 2}),
        json!({"n": "s"}),
        json!({"s": "xy"}),
        json!({"s": 5}),
        json!({"p": "/r/x"}),
        json!({"p": "../x"}),
        json!({"p": ["/r/a", "/etc"]}),
    ]
}

/// Every request of the small world, with its decision.
fn all_decisions(p: &Policy) -> Vec<Decision> {
    let args = args_variants();
    let mut out = Vec::new();
    for server in ["a", "A-B", "x"] {
        for name in ["b", "c", "B"] {
            for a in &args {
                for taint in [&[][..], &["w"][..]] {
                    for principal in [None, Some("p")] {
                        for approver in [true, false] {
                            for approval in [
                                ToolApproval::Approved,
                                ToolApproval::New,
                                ToolApproval::Changed,
                            ] {
                                let mut r = Request::tool(server, name)
                                    .with_args(a)
                                    .with_taint(taint)
                                    .with_approval(approval);
                                if let Some(pr) = principal {
                                    r = r.with_principal(pr);
                                }
                                if !approver {
                                    r = r.without_approver();
                                }
                                out.push(p.decide(&r));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn strictness(v: Verdict) -> u8 {
    match v {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    }
}

fn rules() -> impl Strategy<Value = Vec<(usize, usize, usize)>> {
    prop::collection::vec(
        (0..EFFECTS.len(), 0..TARGETS.len(), 0..CONDITIONS.len()),
        0..8,
    )
}

fn header() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "",
        "default deny",
        "allow_new_tools on",
        "pin_tools off",
        "trusted all",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn adding_a_deny_never_widens_access(
        header in header(), base in rules(), target in 0..TARGETS.len(), condition in 0..CONDITIONS.len(), at in 0usize..8,
    ) {
        let texts: Vec<String> = base.iter().copied().map(rule_text).collect();
        let mut with_deny = texts.clone();
        with_deny.insert(at.min(texts.len()), rule_text((0, target, condition)));
        let before = all_decisions(&policy(header, &texts));
        let after = all_decisions(&policy(header, &with_deny));
        for (b, a) in before.iter().zip(&after) {
            prop_assert!(strictness(a.decision) >= strictness(b.decision), "{b:?} became {a:?}");
        }
    }

    #[test]
    fn rule_order_never_changes_a_decision(header in header(), base in rules(), seed in any::<u64>()) {
        let texts: Vec<String> = base.iter().copied().map(rule_text).collect();
        let mut shuffled = texts.clone();
        // A deterministic shuffle from the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let a = all_decisions(&policy(header, &texts));
        let b = all_decisions(&policy(header, &shuffled));
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!((x.decision, x.source), (y.decision, y.source));
        }
    }

    #[test]
    fn no_allow_overrides_a_deny(header in header(), base in rules(), target in 0..TARGETS.len(), condition in 0..CONDITIONS.len()) {
        let texts: Vec<String> = base.iter().copied().map(rule_text).collect();
        let mut with_allow = texts.clone();
        with_allow.push(rule_text((2, target, condition)));
        let before = all_decisions(&policy(header, &texts));
        let after = all_decisions(&policy(header, &with_allow));
        for (b, a) in before.iter().zip(&after) {
            if matches!(b.source, Source::Deny | Source::Visibility | Source::Pin | Source::Ask) {
                prop_assert_eq!((b.decision, b.source), (a.decision, a.source));
            }
        }
    }
}
