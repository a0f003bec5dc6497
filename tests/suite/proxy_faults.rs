//! The real `mcppol proxy` between a test host (pipes) and a misbehaving
//! server (tests/fixtures/fault/server.py, the one `faults.rs` drives
//! against the pipeline): it crashes mid-call, writes garbage, a line over
//! `--max-line-bytes` or a real one of 100 MB, answers with a wrong or a
//! duplicate id, never answers, floods notifications, changes a tool's
//! definition between listing and call; the host sends more than
//! `--max-pending` requests or goes away mid-call. Each ends with an
//! answer for the host (an error, or the documented refusal), no wait past
//! `--call-timeout`, the server and what it started in its process group
//! gone, and every decision made in the `--audit` file.

#![cfg(target_os = "linux")] // reads /proc
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::proxy::harness::{text, Proxy};

/// The proxy's `--call-timeout` in these tests.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// The most an answer may take past its deadline on a loaded machine.
const SLACK: Duration = Duration::from_secs(5);

const POLICY: &str = "policy fault {\n  default deny\n  allow \"fault/read_file\"\n}\n";

/// A proxy in front of the fault server, with its files.
struct Fault {
    dir: tempfile::TempDir,
    proxy: Proxy,
}

impl Fault {
    /// `mcppol proxy --audit ... --call-timeout 2s EXTRA -- python3
    /// server.py MODE CANCELLED_LOG`, initialized, the tools listed.
    fn start(mode: &str, extra: &[&str], env: &[(&str, &str)]) -> Fault {
        Fault::start_as(POLICY, json!({}), mode, extra, env)
    }

    /// [`Fault::start`] under another policy, the host declaring `caps`.
    fn start_as(
        policy_text: &str,
        caps: Value,
        mode: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Fault {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("fault.mcppol");
        std::fs::write(&policy, policy_text).unwrap();
        let stderr = dir.path().join("proxy.stderr");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault/server.py");
        let mut cmd = Command::new(crate::common::MCPPOL);
        cmd.arg("proxy");
        if !extra.contains(&"--call-timeout") {
            cmd.args(["--call-timeout", "2s"]);
        }
        cmd.arg("--policy")
            .arg(&policy)
            .args(["--server-id", "fault", "--audit"])
            .arg(dir.path().join("audit.jsonl"))
            .args(["--grace", "500ms"])
            .args(extra)
            .arg("--")
            .arg("python3")
            .arg(script)
            .arg(mode)
            .arg(dir.path().join("cancelled.jsonl"))
            .env("FAULT_PIDFILE", dir.path().join("server.pid"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut proxy = Proxy::spawn(cmd, stderr);
        let init = proxy.initialize(caps);
        assert_eq!(init["result"]["serverInfo"]["name"], "fault", "{init}");
        let list = proxy.request("tools/list", json!({}));
        assert_eq!(list["result"]["tools"][0]["name"], "read_file", "{list}");
        Fault { dir, proxy }
    }

    /// Sends `tools/call read_file {"n": N}` under id `id`, unanswered.
    fn send_call(&mut self, id: i64, n: i64) {
        self.proxy
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"n": n}}}));
    }

    /// The answer to request `id`, which must come within `within`.
    fn answer(&mut self, id: i64, started: Instant, within: Duration) -> Value {
        let out = self
            .proxy
            .wait_for(|m| m["id"] == id && m.get("method").is_none());
        assert!(
            started.elapsed() < within,
            "answer {id} took {:?}, past {within:?}",
            started.elapsed()
        );
        out
    }

    /// One call and its answer, within the call timeout and the slack.
    fn call(&mut self, id: i64) -> Value {
        let started = Instant::now();
        self.send_call(id, id);
        self.answer(id, started, CALL_TIMEOUT + SLACK)
    }

    /// The server's and its `sleep`'s pids (written when it started).
    fn pids(&self) -> Vec<u32> {
        let file = self.dir.path().join("server.pid");
        let deadline = Instant::now() + SLACK;
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                return text
                    .split_whitespace()
                    .map(|p| p.parse().unwrap())
                    .collect();
            }
            assert!(Instant::now() < deadline, "the server wrote no pid file");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The proxy exited: it reaped the server (it logs the server's end
    /// once `wait` returned), and neither the server nor the `sleep` it
    /// started in its process group still runs.
    fn assert_reaped(&self) {
        let stderr = self.proxy.stderr_text();
        assert!(stderr.contains("the server ended"), "{stderr}");
        for pid in self.pids() {
            let deadline = Instant::now() + SLACK;
            while running(pid) {
                assert!(Instant::now() < deadline, "process {pid} still runs");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The audit file's lines.
    fn audit(&self) -> Vec<Value> {
        audit_lines(&self.dir.path().join("audit.jsonl"))
    }

    /// The `notifications/cancelled` params the server received.
    fn cancelled(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("cancelled.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn stderr(&self) -> String {
        self.proxy.stderr_text()
    }
}

/// Whether `pid` is a process that still runs (not gone, not a zombie).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command's closing parenthesis.
    match stat.rfind(')') {
        Some(i) => !matches!(stat[i + 1..].trim_start().chars().next(), Some('Z' | 'X')),
        None => false,
    }
}

fn audit_lines(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The audit's decisions as `(name, decision, reason)`.
fn summary(lines: &[Value]) -> Vec<(String, String, String)> {
    lines
        .iter()
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            (s("name"), s("decision"), s("reason"))
        })
        .collect()
}

fn allowed(n: usize) -> Vec<(String, String, String)> {
    vec![("read_file".into(), "allow".into(), "allow_rule".into()); n]
}

/// A JSON-RPC internal error whose message contains `word`.
fn assert_internal_error(out: &Value, word: &str) {
    assert_eq!(out["error"]["code"], -32603, "{out}");
    let message = out["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(word), "`{word}` not in {out}");
}

#[test]
fn a_server_that_crashes_mid_call_fails_every_call_in_flight() {
    let mut f = Fault::start("crash", &[], &[]);
    let started = Instant::now();
    // Three calls in flight; the server dies reading the first.
    for id in [10, 11, 12] {
        f.send_call(id, id);
    }
    for id in [10, 11, 12] {
        let out = f.answer(id, started, SLACK);
        assert_internal_error(&out, "transport");
    }
    // The proxy ends with the server, under its status.
    assert_eq!(f.proxy.wait_exit(SLACK).code(), Some(3), "{}", f.stderr());
    f.assert_reaped();
    // Each call was decided before it was sent: three decisions, three lines.
    assert_eq!(summary(&f.audit()), allowed(3));
}

#[test]
fn a_server_that_writes_garbage_is_not_believed_and_the_session_goes_on() {
    let mut f = Fault::start("garbage", &[], &[]);
    // Lines that are not JSON-RPC are dropped (never relayed); the real
    // answer after them counts.
    let first = f.call(10);
    assert_eq!(text(&first), "after the garbage", "{first}");
    // Garbage and no answer: the call timeout, and the server is told.
    let second = f.call(11);
    assert_internal_error(&second, "timeout");
    // The session goes on: the server still answers (with its error).
    let ping = f.proxy.request("ping", json!({}));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
    // Nothing of the garbage reached the host.
    assert!(f.proxy.quiet_for(Duration::from_millis(200)));
    assert!(f.proxy.backlog.is_empty(), "{:?}", f.proxy.backlog);
    assert!(f.stderr().contains("not JSON-RPC"), "{}", f.stderr());
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(2));
}

/// A server in `mode` writes a line over a 4 KiB bound: the call fails
/// and the session ends (a server that breaks the bound is not trusted
/// with the rest), the child reaped, the decision audited.
fn ends_at_the_bound(mode: &str) {
    let mut f = Fault::start(mode, &["--max-line-bytes", "4096"], &[]);
    let out = f.call(10);
    assert_internal_error(&out, "transport");
    f.proxy.wait_exit(SLACK);
    assert!(f.stderr().contains("over the bound"), "{}", f.stderr());
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_server_line_over_the_bound_ends_the_session() {
    ends_at_the_bound("huge");
}

#[test]
fn a_server_line_of_100_mb_against_the_default_bound() {
    let mut f = Fault::start("huge", &[], &[]);
    let started = Instant::now();
    // The proxy reads up to its 16 MiB bound and stops there.
    let out = f.call(10);
    assert_internal_error(&out, "transport");
    f.proxy.wait_exit(SLACK);
    let took = started.elapsed();
    println!("a line of 100 MB: answered and ended in {took:?}");
    assert!(took < SLACK, "{took:?}");
    assert!(f.stderr().contains("over the bound"), "{}", f.stderr());
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

/// A server in `mode` answers the call under an id it was not asked: the
/// call times out, no answer reaches the host, and the proxy ends cleanly.
fn not_believed(mode: &str) {
    let mut f = Fault::start(mode, &[], &[]);
    let out = f.call(10);
    assert_internal_error(&out, "timeout");
    assert!(f.proxy.quiet_for(Duration::from_millis(200)));
    assert!(f.proxy.backlog.is_empty(), "{:?}", f.proxy.backlog);
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_server_that_answers_with_a_wrong_id_is_not_believed() {
    // Its answers name ids nobody asked (a number and a string).
    not_believed("wrong_id");
}

#[test]
fn a_server_that_answers_with_a_duplicate_id_is_not_believed() {
    // It answers the call under the id of the listing, answered before:
    // not taken for the call's answer, nor passed on as a second answer.
    not_believed("duplicate");
}

#[test]
fn a_server_that_never_answers_times_out_and_is_told() {
    let mut f = Fault::start("silent", &[], &[]);
    let started = Instant::now();
    let out = f.call(10);
    assert_internal_error(&out, "timeout");
    assert!(started.elapsed() >= CALL_TIMEOUT, "{:?}", started.elapsed());
    // The server is told, under the id it got (the proxy's, not the host's).
    let deadline = Instant::now() + SLACK;
    while f.cancelled().is_empty() {
        assert!(Instant::now() < deadline, "no notifications/cancelled");
        std::thread::sleep(Duration::from_millis(20));
    }
    let cancelled = f.cancelled();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["reason"], "timeout");
    let id = cancelled[0]["requestId"].as_i64().unwrap();
    assert!(id > 0 && id != 10, "{cancelled:?}");
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_server_that_floods_notifications_stays_within_memory() {
    let mut f = Fault::start("flood", &[], &[]);
    let started = Instant::now();
    f.send_call(10, 10);
    // The flood passes to the host; the call's answer is the timeout.
    let (out, passed) = f
        .proxy
        .wait_dropping(|m| m["id"] == 10 && m.get("method").is_none());
    assert!(
        started.elapsed() < CALL_TIMEOUT + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert_internal_error(&out, "timeout");
    assert!(passed > 0, "no notification passed");
    // The proxy's peak memory stays small while about a megabyte a
    // millisecond goes through it (bounded channels both ways).
    let peak = f.proxy.status_kib("VmHWM:");
    println!("flood: {passed} notifications passed, proxy peak RSS {peak} KiB");
    assert!(peak > 0 && peak < 128 * 1024, "peak RSS {peak} KiB");
    // The flooding server never reads its input again: it is killed
    // after the grace period, with what it started. The host keeps
    // reading until the proxy's output ends.
    f.proxy.close_input();
    let deadline = Instant::now() + SLACK;
    let status = loop {
        if let Some(status) = f.proxy.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the proxy did not exit");
        let _ = f.proxy.quiet_for(Duration::from_millis(20));
        f.proxy.backlog.clear();
    };
    assert_eq!(status.code(), Some(137), "{}", f.stderr());
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_tool_changed_between_listing_and_call_is_refused_as_definition_changed() {
    let mut f = Fault::start("rug_pull", &[], &[]);
    // The first listing was approved; the server said the list changed,
    // and the proxy listed it again and saw another description.
    f.proxy
        .wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let deadline = Instant::now() + SLACK;
    while !f.stderr().contains("definition changed") {
        assert!(Instant::now() < deadline, "{}", f.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = f.call(10);
    assert_eq!(out["result"]["isError"], true, "{out}");
    assert!(text(&out).contains("reason definition_changed"), "{out}");
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    let audit = f.audit();
    assert_eq!(
        summary(&audit),
        [(
            "read_file".to_string(),
            "deny".to_string(),
            "definition_changed".to_string()
        )]
    );
    assert_eq!(audit[0]["source"], "pin");
}

#[test]
fn requests_over_max_pending_are_refused_at_once() {
    let mut f = Fault::start("silent", &["--max-pending", "4"], &[]);
    let started = Instant::now();
    for id in 10..20 {
        f.send_call(id, id);
    }
    // The six over the bound are refused before the others time out.
    for id in 14..20 {
        let out = f.answer(id, started, CALL_TIMEOUT);
        assert_internal_error(&out, "more than 4 requests in flight");
    }
    for id in 10..14 {
        let out = f.answer(id, started, CALL_TIMEOUT + SLACK);
        assert_internal_error(&out, "timeout");
    }
    // Answered, they free their places.
    let out = f.call(20);
    assert_internal_error(&out, "timeout");
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    // Refused at the door, the six were never decided nor sent, and each
    // has its audit line (issue 22, item 12: one line per request).
    let mut got = summary(&f.audit());
    got.sort();
    let mut want = allowed(5);
    want.extend(vec![
        (
            "read_file".to_string(),
            "deny".to_string(),
            "too_many_pending".to_string()
        );
        6
    ]);
    want.sort();
    assert_eq!(got, want);
}

/// Waits until the audit file holds `n` lines (a call decided and sent).
fn wait_decided(f: &Fault, n: usize) {
    let deadline = Instant::now() + SLACK;
    while f.audit().len() < n {
        assert!(Instant::now() < deadline, "not decided: {}", f.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_host_going_away_mid_call_still_gets_an_answer_and_the_server_stops() {
    let mut f = Fault::start("silent", &["--call-timeout", "60s"], &[]);
    let started = Instant::now();
    f.send_call(10, 10);
    wait_decided(&f, 1);
    // The host closes its side: the server's stdin is closed, it exits,
    // and the call waiting on it is answered before the proxy's output ends.
    f.proxy.close_input();
    let status = f.proxy.wait_exit(SLACK);
    let out = f.answer(10, started, SLACK);
    assert_internal_error(&out, "transport");
    assert_eq!(status.code(), Some(0), "{}", f.stderr());
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn the_host_going_away_from_a_server_that_ignores_it_kills_the_group_after_the_grace() {
    let mut f = Fault::start(
        "silent",
        &["--call-timeout", "60s"],
        &[("FAULT_IGNORE_EOF", "1")],
    );
    let started = Instant::now();
    f.send_call(10, 10);
    wait_decided(&f, 1);
    f.proxy.close_input();
    let status = f.proxy.wait_exit(SLACK);
    assert_eq!(status.code(), Some(137), "{}", f.stderr());
    assert!(
        f.stderr().contains("did not exit in time"),
        "{}",
        f.stderr()
    );
    let out = f.answer(10, started, SLACK);
    assert_internal_error(&out, "transport");
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_server_that_stops_reading_its_input_cannot_hang_the_proxy() {
    use std::io::Write;
    let mut f = Fault::start("deaf", &[], &[]);
    let started = Instant::now();
    f.send_call(10, 10);
    // The host goes on writing (notifications, relayed as they come) past
    // what the server's pipe and the proxy's queue to it hold.
    let mut stdin = f.proxy.take_stdin();
    let writer = std::thread::spawn(move || {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1, "message": "x".repeat(1000)}});
        for _ in 0..600 {
            if writeln!(stdin, "{note}").is_err() {
                break;
            }
        }
        // Dropped: the host goes away.
    });
    let out = f.answer(10, started, CALL_TIMEOUT + SLACK);
    assert_internal_error(&out, "timeout");
    // The proxy goes on reading the host (to its end), stops the server
    // and exits.
    let status = f.proxy.wait_exit(CALL_TIMEOUT + SLACK);
    assert!(writer.is_finished());
    assert_eq!(status.code(), Some(137), "{}", f.stderr());
    assert!(f.stderr().contains("read nothing"), "{}", f.stderr());
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_server_line_that_never_ends_ends_the_session_at_the_bound() {
    // Not read to its end (there is none): past the bound the session ends
    // at once, and the call fails, rather than timing out.
    ends_at_the_bound("endless");
}

#[test]
fn a_flood_of_list_changed_makes_few_listings() {
    // A timeout of its own: the answer comes after the flood, which a
    // loaded machine may take a while to pass on.
    let mut f = Fault::start("list_flood", &["--call-timeout", "20s"], &[]);
    // 2,000 `list_changed` before the answer: all passed to the host, and
    // the proxy lists again once at a time, not once each.
    let started = Instant::now();
    f.send_call(10, 10);
    let (out, passed) = f
        .proxy
        .wait_dropping(|m| m["id"] == 10 && m.get("method").is_none());
    assert!(started.elapsed() < SLACK, "{:?}", started.elapsed());
    assert_eq!(text(&out), "call 10", "{out}; {}", f.stderr());
    // The notifications still coming after the answer.
    let mut passed = passed;
    while !f.proxy.quiet_for(Duration::from_millis(500)) {
        passed += f.proxy.backlog.len();
        f.proxy.backlog.clear();
    }
    assert_eq!(passed, 2_000);
    let listings = f.cancelled().len();
    println!("2,000 list_changed: {listings} listings");
    // The first (before the call), and a few while the flood came.
    assert!(listings <= 10, "{listings} listings");
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    assert_eq!(summary(&f.audit()), allowed(1));
}

#[test]
fn a_relayed_request_the_server_never_answers_times_out_too() {
    let mut f = Fault::start("silent", &[], &[]);
    // Not governed (a ping), but it holds a place of --max-pending: it
    // gets the same deadline, and the server is told.
    let started = Instant::now();
    let out = f.proxy.request("ping", json!({}));
    assert!(
        started.elapsed() >= CALL_TIMEOUT && started.elapsed() < CALL_TIMEOUT + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert_internal_error(&out, "timeout");
    let deadline = Instant::now() + SLACK;
    while f.cancelled().is_empty() {
        assert!(Instant::now() < deadline, "no notifications/cancelled");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(f.cancelled()[0]["reason"], "timeout");
    assert_eq!(f.proxy.close().code(), Some(0));
    f.assert_reaped();
    // Nothing governed, nothing audited.
    assert!(f.audit().is_empty());
}

#[test]
fn the_host_going_away_while_it_is_asked_to_approve_denies_and_audits() {
    let policy = "policy fault {\n  default deny\n  ask confirm: \"fault/read_file\"\n}\n";
    let mut f = Fault::start_as(policy, json!({"elicitation": {}}), "echo", &[], &[]);
    let started = Instant::now();
    f.send_call(10, 10);
    // The proxy asks the host (elicitation), and the host goes away
    // without answering: nobody can approve any more.
    f.proxy.wait_for(|m| m["method"] == "elicitation/create");
    f.proxy.close_input();
    let status = f.proxy.wait_exit(SLACK);
    assert_eq!(status.code(), Some(0), "{}", f.stderr());
    let out = f.answer(10, started, SLACK);
    assert!(text(&out).contains("reason ask_failed"), "{out}");
    f.assert_reaped();
    // The decision was made (ask, then no answer): it is in the audit file.
    assert_eq!(
        summary(&f.audit()),
        [(
            "read_file".to_string(),
            "deny".to_string(),
            "ask_failed".to_string()
        )]
    );
}

#[test]
fn the_host_going_away_while_an_approver_command_runs_denies_and_audits() {
    let policy = "policy fault {\n  default deny\n  ask confirm: \"fault/read_file\"\n}\n";
    let dir = tempfile::tempdir().unwrap();
    let started_file = dir.path().join("approver.started");
    // An approver that takes its time (a person deciding).
    let approver = format!("touch '{}'; exec sleep 30", started_file.display());
    let mut f = Fault::start_as(policy, json!({}), "echo", &["--approver", &approver], &[]);
    let started = Instant::now();
    f.send_call(10, 10);
    while !started_file.exists() {
        assert!(started.elapsed() < SLACK, "the approver did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The host goes away: nobody is there for the call's result, and the
    // ask ends now (not when the proxy exits), decided and audited.
    f.proxy.close_input();
    let status = f.proxy.wait_exit(SLACK);
    assert_eq!(status.code(), Some(0), "{}", f.stderr());
    let out = f.answer(10, started, SLACK);
    assert!(text(&out).contains("reason ask_failed"), "{out}");
    f.assert_reaped();
    assert_eq!(
        summary(&f.audit()),
        [(
            "read_file".to_string(),
            "deny".to_string(),
            "ask_failed".to_string()
        )]
    );
}

#[test]
fn notifications_far_larger_parsed_than_on_the_wire_are_not_held_parsed() {
    use std::io::{BufRead, BufReader, Write};
    // 64 notifications of 1 MiB each, half a million zeros a piece: tens
    // of times larger parsed than on the wire. The host never calls a
    // tool, so nothing that waited for a call may hold them; what is
    // queued for the host is bounded by bytes, as raw lines. This host
    // reads the big lines without parsing them (a debug build's JSON
    // parser would take longer than the proxy).
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("fault.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault/server.py");
    let mut child = Command::new(crate::common::MCPPOL)
        .arg("proxy")
        .arg("--policy")
        .arg(&policy)
        .args(["--server-id", "fault", "--grace", "500ms", "--"])
        .arg("python3")
        .arg(script)
        .arg("big_notes")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("proxy.stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        let mut big = 0;
        let mut out = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            if out.read_until(b'\n', &mut line).unwrap() == 0 {
                return big;
            }
            if line.len() > 100_000 {
                big += 1;
                continue;
            }
            let _ = tx.send(serde_json::from_slice(&line).unwrap());
        }
    });
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let wait = |pick: &dyn Fn(&Value) -> bool| loop {
        let v = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        if pick(&v) {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    wait(&|m| m["id"] == 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    wait(&|m| m["id"] == 2);
    wait(&|m| m["params"]["data"] == "done");
    let peak = super::proxy::harness::proc_status_kib(pid, "VmHWM:");
    println!("big notifications: proxy peak RSS {peak} KiB");
    // The session goes on.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"n": 3}}}));
    let out = wait(&|m| m["id"] == 3);
    assert_eq!(out["result"]["content"][0]["text"], "call 3", "{out}");
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(reader.join().unwrap(), 64);
    // Held parsed, the 64 were about a gigabyte.
    assert!(peak > 0 && peak < 100 * 1024, "peak RSS {peak} KiB");
}

/// Sends `signal` (`-TERM`, ...) to `pid`.
fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigterm_sigint_and_sighup_end_the_servers_group_before_the_proxy_exits() {
    for (signal, code) in [("-TERM", 143), ("-INT", 130), ("-HUP", 129)] {
        // A server that ignores its input closing (as many do for a
        // while): only the proxy ending its group stops it.
        let mut f = Fault::start("echo", &[], &[("FAULT_IGNORE_EOF", "1")]);
        assert_eq!(text(&f.call(10)), "call 10");
        let pids = f.pids();
        let started = Instant::now();
        kill(signal, f.proxy.child.id());
        let status = f.proxy.wait_exit(SLACK);
        assert_eq!(status.code(), Some(code), "{signal}: {}", f.stderr());
        // Within the time hosts give between SIGTERM and SIGKILL (2 s).
        assert!(
            started.elapsed() < Duration::from_millis(2500),
            "{signal}: {:?}",
            started.elapsed()
        );
        for pid in pids {
            let deadline = Instant::now() + Duration::from_secs(2);
            while running(pid) {
                assert!(
                    Instant::now() < deadline,
                    "{signal}: process {pid} still runs"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[test]
fn sigterm_during_the_grace_ends_a_server_that_ignores_sigterm_too() {
    // The SDKs' way to close a server: close its input, wait, SIGTERM.
    // This server ignores both (its `sleep` inherits the ignored SIGTERM):
    // after the proxy's own short grace, its group is killed.
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("fault.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let pidfile = dir.path().join("bg.pid");
    let script = format!(
        "trap '' TERM; sleep 300 & echo $$ $! > '{}'; while true; do sleep 1; done",
        pidfile.display()
    );
    let stderr = dir.path().join("proxy.stderr");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.arg("proxy")
        .arg("--policy")
        .arg(&policy)
        .args(["--server-id", "fault", "--grace", "30s"])
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut p = Proxy::spawn(cmd, stderr);
    let deadline = Instant::now() + SLACK;
    let pids: Vec<u32> = loop {
        let text = std::fs::read_to_string(&pidfile).unwrap_or_default();
        let pids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.len() == 2 {
            break pids;
        }
        assert!(Instant::now() < deadline, "the server wrote no pid file");
        std::thread::sleep(Duration::from_millis(20));
    };
    p.close_input();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    kill("-TERM", p.child.id());
    let status = p.wait_exit(SLACK);
    assert_eq!(status.code(), Some(143), "{}", p.stderr_text());
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    for pid in pids {
        let deadline = Instant::now() + Duration::from_secs(2);
        while running(pid) {
            assert!(Instant::now() < deadline, "process {pid} still runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
