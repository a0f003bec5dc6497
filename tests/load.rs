//! Load: 10,000 governed `tools/call` from 16 concurrent callers while the
//! policy file is rewritten 100 times (and reloaded from disk each time).
//! Every decision is one version's whole (its rule and its verdict agree),
//! a caller never sees an older version after a newer one, none is missing
//! from the log, and memory stays flat. Built on the pipeline and the
//! store (the proxy's own load test is the proxy's: docs/security.md).

#![cfg(feature = "pipeline")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Its own binary (not in tests/suite): it reads the process's RSS, which
// other tests running beside it in one binary would move.
#[path = "suite/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcppol::mcp::text_result;
use mcppol::mcp::{FakeServer, MemoryTransport};
use mcppol::pipeline::*;
use mcppol::{LoadOptions, Store};
use serde_json::json;

const CALLS: usize = 10_000;
const CALLERS: usize = 16;
const REWRITES: usize = 100;

/// Version `n`: one of `t0`, `t1` is allowed (by `a<n>`), the other denied
/// (by `d<n>`); which one flips with each version.
fn version(n: usize) -> String {
    format!(
        "policy p {{\n  default deny\n  allow a{n}: \"fs/t{}\"\n  deny d{n}: \"fs/t{}\"\n}}\n",
        n % 2,
        (n + 1) % 2
    )
}

/// The version a rule id names, and whether it is the allow rule.
fn parse_rule(id: &str) -> (usize, bool) {
    (id[1..].parse().unwrap(), id.starts_with('a'))
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn ten_thousand_calls_while_the_policy_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcppol");
    std::fs::write(&file, version(0)).unwrap();
    let store = Arc::new(Store::open([&file], LoadOptions::default()).unwrap());
    let fake = FakeServer::new()
        .tool(json!({"name": "t0"}), |_| Ok(text_result("t0")))
        .tool(json!({"name": "t1"}), |_| Ok(text_result("t1")));
    let pipeline = Arc::new(
        Pipeline::builder(
            "fs",
            Arc::new(MemoryTransport::new(fake.clone())),
            PolicySource::Store {
                store: store.clone(),
                name: "p".into(),
            },
        )
        .build()
        .unwrap(),
    );

    // The rewriter: a new version on disk, then a reload, 100 times.
    let done = Arc::new(AtomicBool::new(false));
    let rewriter = {
        let (store, file, done) = (store.clone(), file.clone(), done.clone());
        std::thread::spawn(move || {
            for n in 1..=REWRITES {
                std::fs::write(&file, version(n)).unwrap();
                let reloaded = store.reload();
                assert_eq!(reloaded.failed, 0, "version {n} did not load");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            done.store(true, Ordering::SeqCst);
        })
    };

    // RSS once the first thousand calls are through (every caller warm).
    let warm = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut sent = 0;
    let logs = common::capture_logs_async(tracing::Level::DEBUG, async {
        let mut callers = Vec::new();
        for c in 0..CALLERS {
            let p = pipeline.clone();
            let warm = warm.clone();
            callers.push(tokio::spawn(async move {
                let mut newest_seen = 0;
                let mut outcomes = (0, 0);
                for i in 0..CALLS / CALLERS {
                    let tool = format!("t{}", (c + i) % 2);
                    match p.call_tool(&tool, json!({}), &CallOptions::default()).await {
                        Ok(r) => {
                            assert_eq!(r.joined_text(), tool);
                            outcomes.0 += 1;
                        }
                        Err(e) => {
                            let d = e.decision.expect("a denial by policy");
                            let (n, allow) = parse_rule(d.rule_id.as_deref().unwrap());
                            assert!(!allow);
                            // Version n denies t((n+1)%2): verdict and rule agree.
                            assert_eq!(tool, format!("t{}", (n + 1) % 2), "mixed versions");
                            assert!(n >= newest_seen, "version {n} after {newest_seen}");
                            newest_seen = n;
                            outcomes.1 += 1;
                        }
                    }
                    if c == 0 && i == 1000 / CALLERS {
                        warm.store(rss_kib("VmRSS:"), Ordering::SeqCst);
                    }
                    tokio::task::yield_now().await;
                }
                outcomes
            }));
        }
        let mut allowed = 0;
        let mut denied = 0;
        for c in callers {
            let (a, d) = c.await.unwrap();
            allowed += a;
            denied += d;
        }
        assert_eq!(allowed + denied, CALLS);
        sent = allowed;
    })
    .await;
    rewriter.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    // Exactly the allowed calls reached the server.
    assert_eq!(fake.calls().len(), sent);

    // Every decision is in the log, each one version's whole.
    let mut decisions = 0;
    let mut versions = std::collections::BTreeSet::new();
    // The pipeline's decision lines (they say how it was approved), not
    // the engine's own, also at `debug`.
    for line in logs
        .lines()
        .filter(|l| l.contains("mcppol::decision") && l.contains("approval="))
    {
        decisions += 1;
        let field = |name: &str| {
            let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            let end = line[start..].find('"').unwrap() + start;
            line[start..end].to_string()
        };
        let (n, allow) = parse_rule(&field("rule_id"));
        let allowed_tool = format!("t{}", n % 2);
        assert_eq!(
            field("tool") == allowed_tool,
            allow,
            "mixed versions: {line}"
        );
        assert_eq!(field("decision") == "allow", allow, "{line}");
        versions.insert(n);
    }
    assert_eq!(decisions, CALLS, "decisions missing from the log");
    let ended = logs.lines().filter(|l| l.contains("mcppol::call")).count();
    assert_eq!(ended, CALLS);
    assert!(
        versions.len() > 1,
        "the rewrites were not seen: {versions:?}"
    );

    let rss_after_warmup = warm.load(Ordering::SeqCst);
    assert!(rss_after_warmup > 0);
    let rss_end = rss_kib("VmRSS:");
    let peak = rss_kib("VmHWM:");
    println!(
        "load: {CALLS} calls, {REWRITES} rewrites, {} versions seen; RSS after 1,000 calls {rss_after_warmup} KiB, at the end {rss_end} KiB, peak {peak} KiB",
        versions.len()
    );
    // Flat: the log held in memory (a few MB) and no more.
    assert!(
        rss_end.saturating_sub(rss_after_warmup) < 64 * 1024,
        "memory grew from {rss_after_warmup} KiB to {rss_end} KiB"
    );
}
