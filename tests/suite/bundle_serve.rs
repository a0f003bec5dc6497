//! `mcppol serve --bundle`: two replicas poll one HTTP server (started by
//! the test, on a free loopback port, with `ETag` and `If-None-Match`).
//! A new signed revision is picked up by both within a poll interval; a
//! bad signature, a changed file, a broken policy and a truncated download
//! each change nothing (decisions stay the old revision's) and show in
//! `/v1/status` and the log; so does an older signed bundle (rollback).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::bundle::{build, fixture, resign, scratch};

/// The seconds between two checks of a replica.
const POLL: u64 = 2;

/// A bundle server: `GET /policy.bundle` answers the bytes set last, with
/// an `ETag` (their digest), and `304` to a matching `If-None-Match`.
struct BundleServer {
    addr: String,
    body: Arc<Mutex<Vec<u8>>>,
    not_modified: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl BundleServer {
    fn start(body: Vec<u8>) -> BundleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let body = Arc::new(Mutex::new(body));
        let not_modified = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, counted, stopped) = (body.clone(), not_modified.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let bytes = shared.lock().unwrap().clone();
                answer(stream, &bytes, &counted);
            }
        });
        BundleServer {
            addr,
            body,
            not_modified,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/policy.bundle", self.addr)
    }

    fn publish(&self, bytes: Vec<u8>) {
        *self.body.lock().unwrap() = bytes;
    }
}

impl Drop for BundleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(&self.addr);
    }
}

fn answer(stream: TcpStream, bytes: &[u8], not_modified: &AtomicU64) {
    use sha2::Digest;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(&stream);
    let mut if_none_match = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("if-none-match") {
                if_none_match = Some(value.trim().to_string());
            }
        }
    }
    let hash = sha2::Sha256::digest(bytes);
    let etag: String = format!(
        "\"{}\"",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let mut out = &stream;
    if if_none_match.as_deref() == Some(etag.as_str()) {
        not_modified.fetch_add(1, Ordering::Relaxed);
        let _ = write!(
            out,
            "HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nETag: {etag}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
        bytes.len()
    );
    let _ = out.write_all(bytes);
}

/// One `mcppol serve --bundle` process; its stderr is collected.
struct Replica {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn replica(url: &str, audit: &Path) -> Replica {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["serve", "--listen", "127.0.0.1:0", "--name", "github"])
        .args([
            "--bundle",
            url,
            "--bundle-poll",
            &POLL.to_string(),
            "--bundle-pub",
        ])
        .arg(fixture("test-key.pub"))
        .arg("--audit")
        .arg(audit)
        .env("HOME", "/home/dev")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let log = Arc::new(Mutex::new(String::new()));
    let mut addr = None;
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        log.lock().unwrap().push_str(&line);
        if let Some(a) = line
            .trim()
            .strip_prefix("mcppol serve: listening on http://")
        {
            addr = Some(a.to_string());
            break;
        }
        line.clear();
    }
    let addr = addr.unwrap_or_else(|| panic!("no address: {}", log.lock().unwrap()));
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 {
            sink.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    Replica { child, addr, log }
}

fn request(replica: &Replica, method: &str, path: &str, body: &str) -> Value {
    let mut stream = TcpStream::connect(&replica.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    let (_, body) = raw.split_once("\r\n\r\n").unwrap_or(("", ""));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {raw}"))
}

/// `github/create_issue` as the replica decides it: (decision, revision).
fn decide(replica: &Replica) -> (String, String) {
    let d = request(
        replica,
        "POST",
        "/v1/decide",
        r#"{"tool": "github/create_issue"}"#,
    );
    (
        d["decision"].as_str().unwrap_or_default().to_string(),
        d["bundle"]["revision"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn bundle_status(replica: &Replica) -> Value {
    request(replica, "GET", "/v1/status", "")["bundle"].clone()
}

/// Waits until `done` holds, at most `limit`; how long it took.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// `pol/` of `dir` built as `NAME.bundle`, with `github/create_issue`
/// allowed or not.
fn revision(dir: &Path, name: &str, allow_create: bool) -> Vec<u8> {
    let extra = if allow_create {
        "  allow \"github/create_issue\"\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join("pol/github.mcppol"),
        format!("policy github {{\n  default deny\n  allow \"github/get_user\"\n{extra}}}\n"),
    )
    .unwrap();
    let out = build(dir, &format!("{name}.bundle"), name);
    assert!(out.status.success(), "{out:?}");
    std::fs::read(dir.join(format!("{name}.bundle"))).unwrap()
}

#[test]
fn two_replicas_follow_signed_revisions_and_keep_the_last_good_one() {
    let dir = scratch();
    let v1 = revision(dir.path(), "v1", false);
    let server = BundleServer::start(v1);
    let audit = [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")];
    let replicas = [
        replica(&server.url(), &audit[0]),
        replica(&server.url(), &audit[1]),
    ];
    for r in &replicas {
        assert_eq!(decide(r), ("deny".into(), "v1".into()));
        let status = bundle_status(r);
        assert_eq!(status["revision"], "v1");
        assert_eq!(status["last_error"], Value::Null);
    }
    // Unchanged: the server answers 304 to the replicas' If-None-Match.
    assert!(
        wait_for(Duration::from_secs(4 * POLL), || server
            .not_modified
            .load(Ordering::Relaxed)
            >= 2)
        .is_some(),
        "no conditional request"
    );

    // A new signed revision: both replicas within one poll interval (and
    // the time to fetch and verify it).
    server.publish(revision(dir.path(), "v2", true));
    for r in &replicas {
        let took = wait_for(
            Duration::from_secs(POLL) + Duration::from_millis(1500),
            || decide(r) == ("allow".into(), "v2".into()),
        );
        assert!(took.is_some(), "v2 not picked up: {:?}", bundle_status(r));
    }

    // Each bad bundle: refused, shown in the status and the log, and the
    // decisions stay v2's.
    let good = revision(dir.path(), "v3", false);
    let bad_signature = String::from_utf8(good.clone())
        .unwrap()
        .replace("\\\"v3\\\"", "\\\"v4\\\"");
    let changed_file = {
        let mut b: Value = serde_json::from_slice(&good).unwrap();
        b["files"][0]["text"] = json!("policy github { allow \"*\" }\n");
        serde_json::to_vec(&b).unwrap()
    };
    let broken = {
        let path = dir.path().join("broken.bundle");
        std::fs::write(&path, &good).unwrap();
        resign(&path, |m, files| {
            let text = "policy github {\n  allow\n}\n";
            files[0]["text"] = json!(text);
            m["files"][0]["sha256"] = json!(sha256(text));
            m["files"][0]["bytes"] = json!(text.len());
        });
        std::fs::read(&path).unwrap()
    };
    let truncated = good[..good.len() / 2].to_vec();
    let cases = [
        ("signature", bad_signature.into_bytes()),
        ("digest", changed_file),
        ("policy", broken),
        ("format", truncated),
    ];
    for (step, bytes) in cases {
        let failures: Vec<u64> = replicas
            .iter()
            .map(|r| bundle_status(r)["failures"].as_u64().unwrap())
            .collect();
        server.publish(bytes);
        for (r, before) in replicas.iter().zip(&failures) {
            let seen = wait_for(Duration::from_secs(4 * POLL), || {
                let s = bundle_status(r);
                s["failures"].as_u64().unwrap() > *before && s["last_error"]["step"] == step
            });
            let status = bundle_status(r);
            assert!(seen.is_some(), "{step}: not refused: {status}");
            assert_eq!(status["revision"], "v2", "{step}");
            assert_eq!(decide(r), ("allow".into(), "v2".into()), "{step}");
            // The log line reaches the pipe's reader a moment later.
            let logged = wait_for(Duration::from_secs(5), || {
                r.log.lock().unwrap().contains(&format!("step=\"{step}\""))
            });
            let log = r.log.lock().unwrap().clone();
            assert!(logged.is_some(), "{step}: not in the log:\n{log}");
        }
    }

    // The good one after them all loads, and the error clears.
    server.publish(good);
    for r in &replicas {
        let took = wait_for(Duration::from_secs(10 * POLL), || {
            decide(r) == ("deny".into(), "v3".into())
        });
        assert!(took.is_some(), "v3 not picked up: {}", bundle_status(r));
        assert_eq!(bundle_status(r)["last_error"], Value::Null);
    }

    // A hook's audit line names the bundle; no other key changes.
    let event = json!({"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": "/home/dev/p",
        "tool_name": "mcp__github__get_user", "tool_input": {}});
    request(&replicas[0], "POST", "/v1/hooks/claude", &event.to_string());
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&audit[0])
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["decision"], "allow");
    assert_eq!(line["bundle"]["revision"], "v3");
    assert!(line["bundle"]["digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
}

/// `pol/` of `dir` built as `NAME.bundle` at `epoch` (its signed build
/// time), with `github/create_issue` allowed or not.
fn built_at(dir: &Path, name: &str, epoch: u64, allow_create: bool) -> Vec<u8> {
    let extra = if allow_create {
        "  allow \"github/create_issue\"\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join("pol/github.mcppol"),
        format!("policy github {{\n  default deny\n  allow \"github/get_user\"\n{extra}}}\n"),
    )
    .unwrap();
    let file = format!("{name}-{epoch}.bundle");
    let out = crate::common::mcppol()
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .args([
            "bundle",
            "build",
            "pol",
            "-o",
            &file,
            "--revision",
            name,
            "--key",
        ])
        .arg(fixture("test-key.pem"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::read(dir.join(file)).unwrap()
}

#[test]
fn an_older_bundle_or_a_revision_with_other_content_keeps_the_one_in_force() {
    let dir = scratch();
    let t = 1_796_205_600;
    let server = BundleServer::start(built_at(dir.path(), "r7", t, false));
    let r = replica(&server.url(), &dir.path().join("a.jsonl"));
    assert_eq!(decide(&r), ("deny".into(), "r7".into()));
    // Signed with the right key, but built an hour before r7 (a replay of
    // an old bundle), or r7's revision with other policies.
    let cases = [
        ("older", built_at(dir.path(), "r6", t - 3600, true)),
        ("same revision", built_at(dir.path(), "r7", t + 60, true)),
    ];
    for (case, bytes) in cases {
        let before = bundle_status(&r)["failures"].as_u64().unwrap();
        server.publish(bytes);
        let seen = wait_for(Duration::from_secs(4 * POLL), || {
            let s = bundle_status(&r);
            s["failures"].as_u64().unwrap() > before && s["last_error"]["step"] == "revision"
        });
        let status = bundle_status(&r);
        assert!(seen.is_some(), "{case}: not refused: {status}");
        assert_eq!(status["revision"], "r7", "{case}");
        assert_eq!(decide(&r), ("deny".into(), "r7".into()), "{case}");
    }
    let log = r.log.lock().unwrap().clone();
    assert!(log.contains("step=\"revision\""), "{log}");
    // A newer revision still loads.
    server.publish(built_at(dir.path(), "r8", t + 120, true));
    let took = wait_for(Duration::from_secs(4 * POLL), || {
        decide(&r) == ("allow".into(), "r8".into())
    });
    assert!(took.is_some(), "r8 not picked up: {}", bundle_status(&r));
}

#[test]
fn a_replica_does_not_start_without_a_good_bundle() {
    let dir = scratch();
    let good = revision(dir.path(), "v1", false);
    let server = BundleServer::start(good[..100].to_vec());
    let out = crate::common::mcppol()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--bundle",
            &server.url(),
            "--bundle-pub",
        ])
        .arg(fixture("test-key.pub"))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no good bundle to start with: the bundle is truncated"),
        "{stderr}"
    );
    // --policy and --bundle are one or the other.
    let out = crate::common::mcppol()
        .args([
            "serve",
            "--policy",
            "policies",
            "--bundle",
            &server.url(),
            "--bundle-pub",
        ])
        .arg(fixture("test-key.pub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}
