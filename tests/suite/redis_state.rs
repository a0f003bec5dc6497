//! `--state redis://`: two `mcppol gateway --listen` replicas sharing one
//! real `redis-server` (started here, on a free port, in a temp dir):
//! budgets exact across both under concurrent calls, and Redis stopped
//! mid-run fails closed, then service resumes when it is back.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::gateway_http::{call, open, start_with, Gateway};

/// A `redis-server` of this test's own, with nothing persisted.
pub(crate) struct Redis {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl Redis {
    /// `None` (and a message saying why the test is skipped) when
    /// `redis-server` is not installed.
    pub(crate) fn start(dir: &Path) -> Option<Redis> {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = Redis {
            child: None,
            port,
            dir: dir.to_path_buf(),
        };
        redis.resume();
        Some(redis)
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server (again) on its port, and waits for its PONG.
    pub(crate) fn resume(&mut self) {
        let log = std::fs::File::create(self.dir.join("redis.log")).unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.pong() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pong(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut answer = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok()
            && s.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    }

    /// Stops the server and waits until its port refuses.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Two gateway replicas of `policy` on one Redis.
fn replicas(dir: &Path, redis: &Redis, policy: &str) -> [Gateway; 2] {
    let url = redis.url();
    [0, 1].map(|i| {
        let d = dir.join(format!("replica{i}"));
        std::fs::create_dir_all(&d).unwrap();
        start_with(&d, policy, &["a"], &["--state", &url])
    })
}

fn allowed(answer: &Value) -> bool {
    answer["result"]["isError"] != true && answer.get("error").is_none()
}

/// A budget of 20 holds at exactly 20 under 200 concurrent calls split
/// across both replicas; then Redis stops: the budgeted call is denied
/// (`limit_exceeded`), an unbudgeted one still goes through, and counting
/// resumes by itself when Redis is back.
#[test]
fn replicas_share_budgets_in_redis_and_fail_closed_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut redis) = Redis::start(dir.path()) else {
        return;
    };
    let policy = r#"
policy gw {
  limit twenty: "a/echo" 20 per day
  limit roomy: "a/read_file" 100000 per day
  allow "a/echo"
  allow "a/read_file"
}
"#;
    let gateways = Arc::new(replicas(dir.path(), &redis, policy));
    // 10 clients, 5 on each replica, 20 calls each, all at once.
    let clients: Vec<_> = (0..10)
        .map(|i| {
            let gateways = gateways.clone();
            std::thread::spawn(move || {
                let g = &gateways[i % 2];
                let session = open(g, &[]);
                let mut ok = 0;
                for n in 0..20 {
                    let answer = call(g, &session, &[], "a__echo", json!({"n": n}));
                    if allowed(&answer) {
                        ok += 1;
                    } else {
                        assert!(answer.to_string().contains("limit_exceeded"), "{answer}");
                    }
                }
                ok
            })
        })
        .collect();
    let total: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(total, 20, "a budget of 20 across two replicas");

    let [a, b] = &*gateways;
    let (sa, sb) = (open(a, &[]), open(b, &[]));
    let read = |g: &Gateway, s: &str| call(g, s, &[], "a__read_file", json!({"path": "x"}));
    assert!(allowed(&read(a, &sa)), "{}", read(a, &sa));

    redis.stop();
    for (g, s) in [(a, &sa), (b, &sb)] {
        let answer = read(g, s);
        assert!(!allowed(&answer), "allowed with Redis down: {answer}");
        assert!(answer.to_string().contains("limit_exceeded"), "{answer}");
    }

    redis.resume();
    let deadline = Instant::now() + Duration::from_secs(15);
    for (g, s) in [(a, &sa), (b, &sb)] {
        loop {
            if allowed(&read(g, s)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no call allowed after Redis came back"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Two `mcppol serve` replicas on one Redis: `/v1/decide` allows and the
/// hook routes (which wait for Redis on a blocking thread) count in the
/// same budgets; with Redis stopped, a budgeted allow is denied.
#[test]
fn serve_replicas_share_budgets_in_redis() {
    use crate::serve::{http, start_with};
    let dir = tempfile::tempdir().unwrap();
    let Some(mut redis) = Redis::start(dir.path()) else {
        return;
    };
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        "policy p {\n  limit sends: \"mail/send\" 3 per day\n  limit web: \"*/WebFetch\" 2 per day per session\n  limit roomy: \"mail/read\" 1000 per day\n  allow \"mail/read\"\n  allow \"mail/send\"\n  allow \"claude/WebFetch\"\n}\n",
    )
    .unwrap();
    let url = redis.url();
    let [a, b] = [0, 1].map(|i| {
        start_with(
            &policy,
            &dir.path().join(format!("state{i}")),
            &["--state", &url],
        )
    });
    let send = br#"{"tool": "mail/send"}"#;
    let decide = |s| http(s, "POST", "/v1/decide", send).json()["decision"].clone();
    let seen: Vec<Value> = [&a, &b, &a, &b].into_iter().map(decide).collect();
    assert_eq!(seen, ["allow", "allow", "allow", "deny"]);

    let event = json!({"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": "/home/dev",
                       "tool_name": "WebFetch", "tool_input": {"url": "https://example.com"}})
    .to_string();
    let hook = |s| {
        let r = http(s, "POST", "/v1/hooks/claude", event.as_bytes());
        r.json()["hookSpecificOutput"]["permissionDecision"].clone()
    };
    let seen: Vec<Value> = [&a, &b, &a].into_iter().map(hook).collect();
    assert_eq!(seen, ["allow", "allow", "deny"]);

    let read = br#"{"tool": "mail/read"}"#;
    assert_eq!(
        http(&a, "POST", "/v1/decide", read).json()["decision"],
        "allow"
    );
    redis.stop();
    let other = json!({"session_id": "s2", "hook_event_name": "PreToolUse", "cwd": "/home/dev",
                       "tool_name": "WebFetch", "tool_input": {"url": "https://example.com"}})
    .to_string();
    let r = http(&b, "POST", "/v1/hooks/claude", other.as_bytes());
    assert_eq!(
        r.json()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        r.body
    );
    let d = http(&a, "POST", "/v1/decide", read).json();
    assert_eq!(
        (&d["decision"], &d["reason"]),
        (&json!("deny"), &json!("limit_exceeded"))
    );
}

/// A `--state` that is not a redis:// URL is a usage error naming the fix.
#[test]
fn a_state_that_is_not_redis_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.mcppol"),
        "policy p {\n  allow \"a/echo\"\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        json!({"mcpServers": {"a": {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let out = Command::new(crate::common::MCPPOL)
        .args(["gateway", "--policy", "p.mcppol", "--servers", "s.json"])
        .args(["--stdio", "--state", "memcached://x"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--state memcached://x: not a redis:// URL (give redis://HOST:PORT/DB"),
        "{stderr}"
    );
}
