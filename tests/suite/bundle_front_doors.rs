//! `mcppol gateway --bundle` and `mcppol proxy --bundle`: each starts from
//! a `file://` bundle, picks up a new signed revision within one poll
//! interval, keeps it when a bad one arrives (logged), and names the
//! bundle's revision in its audit lines. No start without a good bundle.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::bundle::{build, fixture};
use crate::proxy::harness::{scripted_server, Proxy};

/// The seconds between two checks of the bundle.
const POLL: u64 = 1;

/// `pol/gw.mcppol` of `dir` built as `NAME.bundle` (revision NAME), with
/// `a/echo` allowed or not; its bytes.
fn revision(dir: &Path, name: &str, allow_echo: bool) -> Vec<u8> {
    std::fs::create_dir_all(dir.join("pol")).unwrap();
    let extra = if allow_echo {
        "  allow \"a/echo\"\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join("pol/gw.mcppol"),
        format!("policy gw {{\n  default deny\n  allow \"a/read_file\"\n{extra}}}\n"),
    )
    .unwrap();
    let out = build(dir, &format!("{name}.bundle"), name);
    assert!(out.status.success(), "{out:?}");
    std::fs::read(dir.join(format!("{name}.bundle"))).unwrap()
}

/// Replaces the served bundle at once (a reader never sees half a file).
fn publish(live: &Path, bytes: &[u8]) {
    let next = live.with_extension("next");
    std::fs::write(&next, bytes).unwrap();
    std::fs::rename(&next, live).unwrap();
}

fn bundle_args(live: &Path) -> Vec<String> {
    vec![
        "--bundle".into(),
        format!("file://{}", live.display()),
        "--bundle-pub".into(),
        fixture("test-key.pub").display().to_string(),
        "--bundle-poll".into(),
        POLL.to_string(),
    ]
}

fn last_audit_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .last()
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap_or(Value::Null)
}

/// Calls `tool` until its audit line says `decision` under `revision`, at
/// most `limit`; whether it did.
fn decided_within(
    front: &mut Proxy,
    tool: &str,
    audit: &Path,
    (decision, revision): (&str, &str),
    limit: Duration,
) -> bool {
    let start = Instant::now();
    loop {
        front.call(tool, json!({"x": 1}));
        let line = last_audit_line(audit);
        if line["decision"] == decision && line["bundle"]["revision"] == revision {
            assert!(line["bundle"]["digest"]
                .as_str()
                .unwrap()
                .starts_with("sha256:"));
            return true;
        }
        if start.elapsed() > limit {
            panic!("not {decision} under {revision} after {limit:?}: {line}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// v1 denies `a/echo`; v2 allows it and is picked up within a poll
/// interval; a truncated bundle is refused, logged, and v2 stays.
fn follow_revisions(front: &mut Proxy, tool: &str, dir: &Path, live: &Path, stderr: &Path) {
    let audit = dir.join("audit.jsonl");
    front.initialize(json!({}));
    assert!(decided_within(
        front,
        tool,
        &audit,
        ("deny", "v1"),
        Duration::ZERO
    ));
    publish(live, &revision(dir, "v2", true));
    let within = Duration::from_secs(POLL) + Duration::from_millis(1500);
    assert!(decided_within(front, tool, &audit, ("allow", "v2"), within));

    let v3 = revision(dir, "v3", false);
    publish(live, &v3[..v3.len() / 2]);
    let start = Instant::now();
    while !std::fs::read_to_string(stderr)
        .unwrap_or_default()
        .contains("bundle refused")
    {
        assert!(
            start.elapsed() < Duration::from_secs(4 * POLL + 5),
            "the truncated bundle is not logged: {}",
            std::fs::read_to_string(stderr).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(decided_within(
        front,
        tool,
        &audit,
        ("allow", "v2"),
        Duration::ZERO
    ));
    assert!(front.close().success());
}

/// A folder with `live.bundle` (revision v1).
fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.bundle");
    publish(&live, &revision(dir.path(), "v1", false));
    (dir, live)
}

#[test]
fn the_gateway_follows_a_bundle_and_keeps_the_last_good_one() {
    let (dir, live) = setup();
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"a": {"command": "python3", "args": [scripted_server()]}}})
            .to_string(),
    )
    .unwrap();
    let stderr = dir.path().join("gateway.stderr");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.arg("gateway")
        .args(bundle_args(&live))
        .arg("--servers")
        .arg(&servers)
        .arg("--stdio")
        .arg("--audit")
        .arg(dir.path().join("audit.jsonl"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut gateway = Proxy::spawn(cmd, stderr.clone());
    follow_revisions(&mut gateway, "a__echo", dir.path(), &live, &stderr);
}

#[test]
fn the_proxy_follows_a_bundle_and_keeps_the_last_good_one() {
    let (dir, live) = setup();
    let audit = dir.path().join("audit.jsonl");
    let mut args = bundle_args(&live);
    args.extend(["--server-id".into(), "a".into(), "--audit".into()]);
    args.push(audit.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut proxy = Proxy::start(dir.path(), &args, &[("NO_COLOR", "1")]);
    let stderr = dir.path().join("proxy.stderr");
    follow_revisions(&mut proxy, "echo", dir.path(), &live, &stderr);
}

#[test]
fn neither_starts_without_a_good_bundle() {
    let (dir, live) = setup();
    let good = std::fs::read(&live).unwrap();
    publish(&live, &good[..100]);
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"a": {"command": "python3", "args": [scripted_server()]}}})
            .to_string(),
    )
    .unwrap();
    let gateway = ["gateway", "--stdio", "--servers", servers.to_str().unwrap()];
    let proxy = ["proxy", "--server-id", "a", "--", "python3", "-c", "pass"];
    for front in [&gateway[..], &proxy[..]] {
        let (verb, rest) = front.split_first().unwrap();
        let out = crate::common::mcppol()
            .arg(verb)
            .args(bundle_args(&live))
            .args(rest)
            .env("NO_COLOR", "1")
            .write_stdin("")
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{verb}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("no good bundle to start with: the bundle is truncated"),
            "{verb}: {stderr}"
        );
    }
}
