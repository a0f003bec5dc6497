//! Load through the real `mcppol proxy`: `tools/call` from 16 requests in
//! flight at once while the policy file is rewritten, alternating two
//! policies that decide the marker tool differently (each version's rule
//! ids name it) and, now and then, a broken version. Every answer is one
//! version's whole decision (an allow is the server's answer to that very
//! call; a deny names a deny rule of a denying version), never an error;
//! no call sees an older version than one an earlier answer showed; every
//! decision is in the audit file, the same as the host's answer; and the
//! proxy's peak RSS stays bounded (printed).
//!
//! 10,000 calls over 100 rewrites, in `cargo test` (and so in `.ci/run`):
//! about 16 s, paced so that every rewrite is seen. The figures:
//!
//! ```sh
//! cargo test --test suite proxy_load -- --nocapture
//! ```

#![cfg(target_os = "linux")] // reads /proc
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcppol::pipeline::args_digest;
use serde_json::{json, Value};

use super::proxy::harness::Proxy;

/// Requests in flight at once.
const IN_FLIGHT: usize = 16;
/// Host ids of the calls start here (below are the handshake's).
const FIRST_ID: usize = 1_000;
/// The time between two rewrites: the store takes a change once the file
/// has been quiet for 50 ms, so closer ones would be taken as one. The
/// calls are paced to spread over all the rewrites.
const GAP: Duration = Duration::from_millis(150);
/// A generous bound on the proxy's peak RSS (it is about 20 MiB).
const MAX_PEAK_KIB: u64 = 256 * 1024;
/// The most the RSS may grow between the first thousand calls and the end.
const MAX_GROWTH_KIB: u64 = 64 * 1024;

/// Version `n` of the policy: even versions allow the marker tool
/// (`a<n>`), odd ones deny it (`d<n>`).
fn version(n: usize) -> String {
    if n.is_multiple_of(2) {
        format!("policy load {{\n  default deny\n  allow a{n}: \"fault/read_file\"\n}}\n")
    } else {
        format!("policy load {{\n  default deny\n  deny d{n}: \"fault/read_file\"\n}}\n")
    }
}

/// A version that does not load (the last good one stays in force).
const BROKEN: &str = "policy load {\n  default deny\n  deny oops:\n}\n";

/// The version a rule id names, and whether it is an allow rule.
fn rule_version(id: &str) -> (usize, bool) {
    let n = id[1..]
        .parse()
        .unwrap_or_else(|_| panic!("not a rule of a version: {id}"));
    (n, id.starts_with('a'))
}

/// Rewrites the file: in place, or (every other time) by a rename, as
/// editors save.
fn rewrite(path: &Path, text: &str, k: usize) {
    if k.is_multiple_of(2) {
        std::fs::write(path, text).unwrap();
    } else {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
}

/// What the host got for one call.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Allowed,
    /// Denied by the rule of this version.
    Denied(usize),
}

fn run(calls: usize, rewrites: usize) {
    let dir = tempfile::tempdir().unwrap();
    // The policy in a folder of its own: the store watches the folder, and
    // the audit file's writes would keep it busy (docs/proxy.md).
    std::fs::create_dir(dir.path().join("policy")).unwrap();
    let policy = dir.path().join("policy/load.mcppol");
    std::fs::write(&policy, version(0)).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let stderr = dir.path().join("proxy.stderr");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault/server.py");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.arg("proxy")
        .arg("--policy")
        .arg(&policy)
        .args(["--server-id", "fault", "--audit"])
        .arg(&audit)
        .args(["--", "python3"])
        .arg(script)
        .arg("echo")
        .env("MCPPOL_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut p = Proxy::spawn(cmd, stderr);
    p.initialize(json!({}));
    p.request("tools/list", json!({}));

    let started = Instant::now();
    let every = (calls / (rewrites + 1)).max(1);
    // Call i is sent no earlier than its share of the whole span.
    let span = GAP * u32::try_from(rewrites + 1).unwrap();
    let not_before = |i: usize| started + span.mul_f64(i as f64 / calls as f64);
    let mut written = 0;
    let mut broken = 0;
    let mut sent = 0;
    let mut received = 0;
    // The newest version an answer had shown when each call was sent.
    let mut floor_at_send = vec![0usize; calls];
    let mut newest_shown = 0;
    let mut answers: Vec<Option<Answer>> = vec![None; calls];
    let mut rss_warm = 0;
    let send = |p: &mut Proxy, i: usize| {
        p.send(
            json!({"jsonrpc": "2.0", "id": FIRST_ID + i, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"n": i}}}),
        );
    };
    while sent < IN_FLIGHT.min(calls) {
        send(&mut p, sent);
        sent += 1;
    }
    while received < calls {
        let m = p.recv();
        let i = m["id"]
            .as_u64()
            .and_then(|id| usize::try_from(id).ok())
            .and_then(|id| id.checked_sub(FIRST_ID))
            .filter(|&i| i < calls)
            .unwrap_or_else(|| panic!("not an answer to a call: {m}"));
        assert!(answers[i].is_none(), "a second answer to call {i}: {m}");
        assert!(m.get("error").is_none(), "call {i} failed: {m}");
        let result = &m["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or("");
        let answer = if result["isError"] == true {
            // "mcppol refused this call: decision deny, reason deny_rule, rule dN, ..."
            let rule = text
                .split("rule ")
                .nth(1)
                .and_then(|r| r.split([',', '.']).next())
                .unwrap_or_else(|| panic!("no rule in {m}"));
            assert!(
                text.contains("decision deny, reason deny_rule"),
                "call {i}: {text}"
            );
            let (n, allow) = rule_version(rule);
            assert!(!allow && n % 2 == 1, "mixed versions: call {i}: {text}");
            newest_shown = newest_shown.max(n);
            Answer::Denied(n)
        } else {
            // The server's answer to this very call (ids mapped right).
            assert_eq!(text, format!("call {i}"), "{m}");
            Answer::Allowed
        };
        answers[i] = Some(answer);
        received += 1;
        if received == 1_000.min(calls) {
            rss_warm = p.status_kib("VmRSS:");
        }
        if received.is_multiple_of(every) && written < rewrites {
            written += 1;
            // Every fifth rewrite is broken; the others alternate.
            if written.is_multiple_of(5) {
                rewrite(&policy, BROKEN, written);
                broken += 1;
            } else {
                rewrite(&policy, &version(written), written);
            }
        }
        if sent < calls {
            let wait = not_before(sent).saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            floor_at_send[sent] = newest_shown;
            send(&mut p, sent);
            sent += 1;
        }
    }
    let took = started.elapsed();
    let rss_end = p.status_kib("VmRSS:");
    let peak = p.status_kib("VmHWM:");
    assert_eq!(p.close().code(), Some(0));
    assert_eq!(written, rewrites);

    // Every decision is in the audit file, once, and is the host's answer.
    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), calls, "decisions missing from the audit file");
    let by_digest: HashMap<String, &Value> = lines
        .iter()
        .map(|l| (l["args_digest"].as_str().unwrap().to_string(), l))
        .collect();
    assert_eq!(by_digest.len(), calls, "a call audited twice");
    let mut versions = BTreeSet::new();
    let mut allowed = 0;
    for (i, answer) in answers.iter().enumerate() {
        let line = by_digest
            .get(&args_digest(&json!({"n": i})))
            .unwrap_or_else(|| panic!("call {i} is not in the audit file"));
        let (n, allow) = rule_version(line["rule_id"].as_str().unwrap());
        // One version's whole: its rule and its verdict agree.
        assert_eq!(allow, n % 2 == 0, "mixed versions: {line}");
        assert_eq!(line["decision"], if allow { "allow" } else { "deny" });
        assert!(
            n >= floor_at_send[i],
            "call {i} saw version {n} after an answer showed {}",
            floor_at_send[i]
        );
        match answer {
            Some(Answer::Allowed) => {
                assert!(allow, "call {i}: answered allowed, audited {line}");
                allowed += 1;
            }
            Some(Answer::Denied(d)) => assert_eq!(*d, n, "call {i}: {line}"),
            None => panic!("call {i} was not answered"),
        }
        versions.insert(n);
    }
    let stderr = p.stderr_text();
    println!(
        "proxy load: {calls} calls ({IN_FLIGHT} in flight, paced over at least {span:?}) over {rewrites} rewrites ({broken} broken) in {:.2} s ({:.0} calls/s); {} versions decided, {allowed} allowed; proxy RSS after 1,000 calls {rss_warm} KiB, at the end {rss_end} KiB, peak (VmHWM) {peak} KiB",
        took.as_secs_f64(),
        calls as f64 / took.as_secs_f64(),
        versions.len()
    );
    assert!(
        versions.len() > rewrites / 4,
        "the rewrites were not seen: {versions:?}"
    );
    // A broken version was logged with its code, and never decided.
    assert!(stderr.contains("mcppol::parse"), "{stderr}");
    assert!(rss_warm > 0 && peak > 0);
    assert!(peak < MAX_PEAK_KIB, "peak RSS {peak} KiB");
    assert!(
        rss_end.saturating_sub(rss_warm) < MAX_GROWTH_KIB,
        "RSS grew from {rss_warm} KiB to {rss_end} KiB"
    );
}

#[test]
fn proxy_load_10000_calls_while_the_policy_is_rewritten_100_times() {
    run(10_000, 100);
}
