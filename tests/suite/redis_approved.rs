//! `--state redis://` and approved fingerprints: the first listing any
//! replica reads is every replica's baseline. A replica started after a
//! tool's definition changed (a rug pull) treats it as changed (the pin's
//! `definition_changed`, and left out of its listing), not as its own
//! first listing; with Redis down at its first listing nothing is approved
//! (every tool new) until Redis answers again.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway_http::{call, http, open, start_with_env, Gateway};
use crate::redis_state::Redis;

/// Wildcard allows: a tool the baseline does not hold (new) matches none
/// of them (`allow_new_tools` is off), so it is denied by the default.
const POLICY: &str = "policy gw {\n  default deny\n  allow \"a/*\"\n}\n";

/// A replica on `redis`; `changed`: its server lists `echo` changed.
fn replica(dir: &Path, redis: &Redis, name: &str, changed: bool) -> Gateway {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let env: &[(&str, &str)] = if changed {
        &[("SCRIPTED_CHANGED", "1")]
    } else {
        &[]
    };
    start_with_env(&d, POLICY, &["a"], &["--state", &redis.url()], env)
}

fn result_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn allowed(answer: &Value) -> bool {
    answer["result"]["isError"] != true && answer.get("error").is_none()
}

/// The names the gateway lists to the host.
fn listed(g: &Gateway, session: &str) -> Vec<String> {
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("mcp-session-id", session),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string();
    let (status, _, body) = http(g, "POST", "/mcp", &headers, &body);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn a_later_replica_holds_a_changed_tool_to_the_first_listing_and_redis_down_approves_none() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut redis) = Redis::start(dir.path()) else {
        return;
    };
    let a = replica(dir.path(), &redis, "a", false);
    let sa = open(&a, &[]);
    let echo = call(&a, &sa, &[], "a__echo", json!({}));
    assert!(allowed(&echo), "A's first listing is the baseline: {echo}");

    // The upstream's `echo` has changed by the time B first lists it.
    let b = replica(dir.path(), &redis, "b", true);
    let sb = open(&b, &[]);
    let echo = call(&b, &sb, &[], "a__echo", json!({}));
    assert!(!allowed(&echo), "{echo}");
    assert!(
        result_text(&echo).contains("definition_changed"),
        "changed against A's listing, not approved as B's own: {echo}"
    );
    let read = call(&b, &sb, &[], "a__read_file", json!({"path": "/srv/x"}));
    assert!(allowed(&read), "an unchanged tool stays approved: {read}");
    let names = listed(&b, &sb);
    assert!(names.contains(&"a__read_file".to_string()), "{names:?}");
    assert!(
        !names.contains(&"a__echo".to_string()),
        "B never read the approved definition, so it lists none: {names:?}"
    );
    // A still lists and calls its own (approved) `echo`.
    assert!(listed(&a, &sa).contains(&"a__echo".to_string()));

    // Redis down at C's first listing: nothing is approved, so every tool
    // is new and a wildcard allow lets none through.
    redis.stop();
    let c = replica(dir.path(), &redis, "c", false);
    let sc = open(&c, &[]);
    let read = call(&c, &sc, &[], "a__read_file", json!({"path": "/srv/x"}));
    assert!(!allowed(&read), "no baseline, no approval: {read}");
    assert!(result_text(&read).contains("no_rule"), "{read}");

    // Redis is back (empty: nothing was persisted): C reads (here, sets)
    // the baseline again at its next call, by itself.
    redis.resume();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let read = call(&c, &sc, &[], "a__read_file", json!({"path": "/srv/x"}));
        if allowed(&read) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "C did not recover its baseline: {read}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `mcppol proxy --state`: the same shared baseline for proxies of one
/// server id.
#[test]
fn a_later_proxy_holds_a_changed_tool_to_the_first_proxys_listing() {
    use crate::proxy::harness::Proxy;
    let dir = tempfile::tempdir().unwrap();
    let Some(redis) = Redis::start(dir.path()) else {
        return;
    };
    let policy = dir.path().join("p.mcppol");
    std::fs::write(&policy, "policy p {\n  default deny\n  allow \"s/*\"\n}\n").unwrap();
    let url = redis.url();
    let proxy = |name: &str, env: &[(&str, &str)]| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let args = [
            "--policy",
            policy.to_str().unwrap(),
            "--server-id",
            "s",
            "--state",
            &url,
        ];
        let mut p = Proxy::start(&d, &args, env);
        p.initialize(json!({}));
        p
    };
    let mut a = proxy("a", &[]);
    let first = a.call("echo", json!({}));
    assert!(allowed(&first), "{first}");
    let mut b = proxy("b", &[("SCRIPTED_CHANGED", "1")]);
    let echo = b.call("echo", json!({}));
    assert!(
        !allowed(&echo) && result_text(&echo).contains("definition_changed"),
        "{echo}"
    );
    assert!(allowed(&b.call("read_file", json!({"path": "/srv/x"}))));
}
