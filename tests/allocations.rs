//! Deciding allocates nothing: the benchmarks' generated policies at every
//! size, and their whole request mix (deny, ask, allow and default
//! decisions, folded names, path and regex predicates), counted by a
//! counting allocator that wraps the system allocator for this test binary.
//! The figure is also printed by the `load` benchmark (allocs/decision).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::test_util::gen;

use std::alloc::System;
use std::hint::black_box;

use mcppol::{PolicySet, Request};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The counts are process-wide: tests that measure them take turns, or one
/// would count what another (in its own thread) allocates meanwhile.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_decision_allocates_nothing_at_any_size() {
    let _turn = measuring();
    for size in gen::SIZES {
        let work = gen::Workload::new(size).unwrap();
        let set = PolicySet::from_text("generated.mcppol", &work.text).unwrap();
        let policy = set.get(&work.spec.name).unwrap();
        let taints: Vec<Vec<&str>> = work.requests.iter().map(|(_, r)| r.taint_refs()).collect();
        let requests: Vec<Request<'_>> = work
            .requests
            .iter()
            .zip(&taints)
            .map(|((_, r), t)| gen::mcppol_request(r, t))
            .collect();
        let mut kinds = [0usize; 5];
        // Once to warm up (a regex builds its search cache on first use).
        for r in &requests {
            kinds[gen::kind_of(&policy.decide(r))] += 1;
        }
        assert!(
            kinds[..4].iter().all(|&n| n > 0),
            "every kind of decision is in the mix: {kinds:?}"
        );
        let region = Region::new(GLOBAL);
        for r in &requests {
            black_box(policy.decide(black_box(r)));
        }
        let change = region.change();
        assert_eq!(
            (change.allocations, change.reallocations),
            (0, 0),
            "{size} rules: {} allocations over {} decisions",
            change.allocations + change.reallocations,
            requests.len()
        );
    }
}

/// Rule ids and a policy name longer than 23 bytes (past what `SmolStr`
/// holds inline, so shared behind a reference count, not copied): a
/// decision still allocates nothing, for every kind of decision.
#[test]
fn long_rule_ids_and_policy_names_allocate_nothing() {
    let _turn = measuring();
    let name = "a_policy_name_longer_than_twenty_three_bytes";
    let text = format!(
        "policy {name} {{\n  default deny\n  \
         deny the_deny_rule_with_a_long_identifier: \"*/delete_*\"\n  \
         ask the_ask_rule_with_a_long_identifier: \"mail/send\"\n  \
         allow the_allow_rule_with_a_long_identifier: \"fs/read_*\"\n}}\n"
    );
    let set = PolicySet::from_text("long.mcppol", &text).unwrap();
    let policy = set.get(name).unwrap();
    let requests = [
        (
            Request::tool("fs", "delete_all"),
            Some("the_deny_rule_with_a_long_identifier"),
        ),
        (
            Request::tool("mail", "send"),
            Some("the_ask_rule_with_a_long_identifier"),
        ),
        (
            Request::tool("fs", "read_file"),
            Some("the_allow_rule_with_a_long_identifier"),
        ),
        (Request::tool("fs", "write_file"), None),
    ];
    for (request, id) in &requests {
        let d = policy.decide(request);
        assert_eq!(d.rule_id.as_deref(), *id);
        assert_eq!(d.policy.as_deref(), Some(name));
    }
    assert!(name.len() > 23);
    assert!(requests
        .iter()
        .flat_map(|(_, id)| id)
        .all(|id| id.len() > 23));
    // The counts are process-wide and this test is quick: it can measure
    // while the harness still starts the other tests' threads (which
    // allocates). Others' allocations only add, so one round of 400
    // decisions counted at 0 shows deciding allocates nothing; a decision
    // that allocated would count in every round.
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let region = Region::new(GLOBAL);
        for _ in 0..100 {
            for (request, _) in &requests {
                black_box(policy.decide(black_box(request)));
            }
        }
        let change = region.change();
        rounds.push(change.allocations + change.reallocations);
        if rounds.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(
        rounds.last(),
        Some(&0),
        "allocations per round of {} decisions: {rounds:?}",
        100 * requests.len()
    );
}
