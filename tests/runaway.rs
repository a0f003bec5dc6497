//! Inputs that used to run away with memory or time now stay within
//! generous bounds (the figures themselves are in the `load` benchmark and
//! docs/performance.md). A counting allocator wraps the system allocator
//! for this test binary, so the bounds are on bytes, not on seconds, except
//! where only time can tell, and then the limit is minutes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::System;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use mcppol::{PolicySet, Request, Verdict};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocation counts are per process: one measuring test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;

fn policy(lines: impl Iterator<Item = String>) -> String {
    let mut text = String::from("policy p {\n");
    for line in lines {
        text.push_str("  ");
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("}\n");
    text
}

/// Loads `text`, returning what loading allocated (bytes) and the result.
fn load_counted(text: &str) -> (usize, Result<PolicySet, mcppol::LoadError>) {
    let region = Region::new(GLOBAL);
    let result = PolicySet::from_text("big.mcppol", text);
    (region.change().bytes_allocated, result)
}

/// Runs `work` on a thread and fails if it takes longer than `limit`: a
/// guard against loads that grow quadratically, not a speed measurement.
fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

#[test]
fn identical_regexes_are_compiled_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 3,000 lines, 77 KB: this took 3.4 GB and 21 s to load.
    let text = policy((0..3000).map(|i| format!(r#"deny "s{i}" ~ /\w{{20}}/"#)));
    let (bytes, set) = load_counted(&text);
    let set = set.unwrap_or_else(|e| panic!("{}", e.render(false)));
    assert!(bytes < 64 * MIB, "loading allocated {} MiB", bytes / MIB);
    let p = set.pick(None).unwrap();
    let long = "x".repeat(20);
    assert_eq!(
        p.decide(&Request::tool("s2999", &long)).decision,
        Verdict::Deny
    );
    assert_eq!(
        p.decide(&Request::tool("s1", "short")).decision,
        Verdict::Ask
    );
}

#[test]
fn a_file_past_the_regex_budget_is_refused_with_a_clear_error() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Distinct regexes, each about 1 MiB compiled.
    let text = policy((0..3000).map(|i| format!(r#"deny "s{i}" ~ /\w{{20}}{i}/"#)));
    let (bytes, set) = load_counted(&text);
    let err = set.expect_err("the budget refuses the file");
    let budget: Vec<_> = err
        .diagnostics
        .iter()
        .filter(|d| d.code == "mcppol::compile::regex_budget")
        .collect();
    assert_eq!(budget.len(), 1, "{}", err.render(false));
    assert!(
        budget[0].message.contains("64 MiB"),
        "{}",
        budget[0].message
    );
    // Compiling stops at the budget: nowhere near 3,000 MiB.
    assert!(bytes < 512 * MIB, "loading allocated {} MiB", bytes / MIB);
}

#[test]
fn many_small_distinct_regexes_fit_the_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let text = policy((0..2000).map(|i| format!(r#"deny "s" ~ /^tool_{i}$/"#)));
    let (_, set) = load_counted(&text);
    let set = set.unwrap_or_else(|e| panic!("{}", e.render(false)));
    let p = set.pick(None).unwrap();
    assert_eq!(
        p.decide(&Request::tool("s", "tool_1999")).decision,
        Verdict::Deny
    );
}

#[test]
fn eighty_thousand_server_globs_load_and_decide() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 1.6 MB: each server glob was filed by a linear search (27-48 s in a
    // release build). Minutes are a generous bound for a debug build.
    let text = policy((0..80_000).map(|i| format!(r#"allow "s{i}*/t""#)));
    let set = within(Duration::from_secs(240), move || {
        PolicySet::from_text("big.mcppol", &text).map_err(|e| e.render(false))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let p = set.pick(None).unwrap();
    let d = p.decide(&Request::tool("s79999", "t"));
    assert_eq!(d.decision, Verdict::Allow);
    assert_eq!(
        d.rule_id.as_deref(),
        Some("allow:7"),
        "s7* is the first in file order"
    );
    assert_eq!(p.decide(&Request::tool("x1", "t")).decision, Verdict::Ask);
}
