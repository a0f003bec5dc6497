//! `--state redis://` beyond budgets: two `mcppol gateway --listen`
//! replicas on one real `redis-server` share the grants `allow_always`
//! records and a stateless principal's taint; with Redis stopped, a grant
//! reads as none (asked again) and taint as tainted; both replicas recover
//! by themselves when Redis is back.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway_http::{call, open, start_with, Gateway};
use crate::gateway_stateless::{self as stateless, DANA, OMAR};
use crate::redis_state::Redis;

const POLICY: &str = r#"
policy gw {
  default deny
  deny tainted_write: "b/echo" when tainted
  ask confirm: "a/secret"
  allow "a/*", "b/*"
}
"#;

/// One replica on `redis`, whose approver answers `answer` and appends a
/// line to `asked` each time it is asked.
fn replica(dir: &Path, redis: &Redis, name: &str, answer: &str, asked: &Path) -> Gateway {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let approver = format!(
        "cat > /dev/null; echo asked >> '{}'; echo {answer}",
        asked.display()
    );
    let url = redis.url();
    start_with(
        &d,
        POLICY,
        &["a", "b"],
        &[
            "--state",
            &url,
            "--tokens",
            "TOKENS",
            "--approver",
            &approver,
        ],
    )
}

fn asked(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

fn allowed(answer: &Value) -> bool {
    answer["result"]["isError"] != true && answer.get("error").is_none()
}

/// A stateless call's result was refused by the taint rule.
fn taint_refused(result: &Value) -> bool {
    result["isError"] == true && result.to_string().contains("rule tainted_write")
}

#[test]
fn replicas_share_grants_and_taint_and_fail_closed_without_redis() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut redis) = Redis::start(dir.path()) else {
        return;
    };
    // A's approver grants always; B's refuses, so a call B lets through
    // without asking was settled by A's grant.
    let (asked_a, asked_b) = (dir.path().join("asked-a"), dir.path().join("asked-b"));
    let a = replica(dir.path(), &redis, "a", "allow_always", &asked_a);
    let b = replica(dir.path(), &redis, "b", "deny", &asked_b);
    let dana = [("authorization", DANA)];
    let (sa, sb) = (open(&a, &dana), open(&b, &dana));
    let secret = |g: &Gateway, s: &str| call(g, s, &dana, "a__secret", json!({}));

    let first = secret(&b, &sb);
    assert!(!allowed(&first), "B's approver refuses: {first}");
    assert_eq!(asked(&asked_b), 1);
    let granted = secret(&a, &sa);
    assert!(allowed(&granted), "{granted}");
    assert_eq!(asked(&asked_a), 1);
    let settled = secret(&b, &sb);
    assert!(allowed(&settled), "A's grant settles B's ask: {settled}");
    assert_eq!(asked(&asked_b), 1, "B did not ask");

    // A stateless caller's result through A taints dana at B; omar is
    // not tainted.
    let echo =
        |g: &Gateway, who: &str, tool: &str| stateless::call(g, &[("authorization", who)], tool);
    assert!(!echo(&a, DANA, "a__echo")["isError"]
        .as_bool()
        .unwrap_or(false));
    let at_b = echo(&b, DANA, "b__echo");
    assert!(taint_refused(&at_b), "A's taint of dana reaches B: {at_b}");
    let omar = echo(&b, OMAR, "b__echo");
    assert!(!taint_refused(&omar), "{omar}");

    redis.stop();
    let again = secret(&b, &sb);
    assert!(
        !allowed(&again),
        "no grant can be read: asked and refused: {again}"
    );
    assert_eq!(asked(&asked_b), 2, "B asked again with Redis down");
    let unknown = echo(&b, OMAR, "b__echo");
    assert!(
        taint_refused(&unknown),
        "unreadable taint counts as tainted: {unknown}"
    );
    let unknown = echo(&a, OMAR, "b__echo");
    assert!(taint_refused(&unknown), "at A too: {unknown}");

    // Redis is back (empty: nothing was persisted). Each replica serves
    // again by itself: omar is clean, and a new grant through A settles
    // B's ask.
    redis.resume();
    let deadline = Instant::now() + Duration::from_secs(15);
    for g in [&a, &b] {
        while taint_refused(&echo(g, OMAR, "b__echo")) {
            assert!(
                Instant::now() < deadline,
                "taint unknown after Redis came back"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert!(allowed(&secret(&a, &sa)));
    assert_eq!(asked(&asked_a), 2, "the grant was lost with Redis's data");
    let settled = secret(&b, &sb);
    assert!(allowed(&settled), "{settled}");
    assert_eq!(asked(&asked_b), 2, "B settled by the new grant");
    // A held dana's taint itself, and writes it back: B sees it again.
    assert!(taint_refused(&echo(&a, DANA, "b__echo")));
    assert!(taint_refused(&echo(&b, DANA, "b__echo")));
}

/// `mcppol proxy --state`: a grant through one proxy settles the same ask
/// at another proxy of the same server (no principal: the grants made
/// without one); with Redis stopped the ask is put again.
#[test]
fn proxies_share_grants_in_redis() {
    use crate::proxy::harness::Proxy;
    let dir = tempfile::tempdir().unwrap();
    let Some(mut redis) = Redis::start(dir.path()) else {
        return;
    };
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  ask \"s/secret\"\n  allow \"s/echo\"\n}\n",
    )
    .unwrap();
    let url = redis.url();
    let proxy = |name: &str, answer: &str, asked: &Path| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let approver = format!(
            "cat > /dev/null; echo asked >> '{}'; echo {answer}",
            asked.display()
        );
        let args = [
            "--policy",
            policy.to_str().unwrap(),
            "--server-id",
            "s",
            "--state",
            &url,
            "--approver",
            &approver,
        ];
        let mut p = Proxy::start(&d, &args, &[]);
        p.initialize(json!({}));
        p
    };
    let (asked_a, asked_b) = (dir.path().join("asked-a"), dir.path().join("asked-b"));
    let mut a = proxy("a", "allow_always", &asked_a);
    let mut b = proxy("b", "deny", &asked_b);
    let allowed =
        |answer: &Value| answer["result"]["isError"] != true && answer.get("error").is_none();
    assert!(allowed(&a.call("secret", json!({}))));
    let settled = b.call("secret", json!({}));
    assert!(allowed(&settled), "A's grant settles B's ask: {settled}");
    assert_eq!(asked(&asked_b), 0, "B did not ask");
    redis.stop();
    let again = b.call("secret", json!({}));
    assert!(
        !allowed(&again),
        "no grant can be read: asked and refused: {again}"
    );
    assert_eq!(asked(&asked_b), 1);
}
