//! Load through the real `mcppol gateway --listen` over loopback HTTP: 64
//! host sessions at once (each its own kept-alive connection and its own
//! two scripted stdio servers, `a` and `b`), `tools/call` to both while
//! the policy file is rewritten, alternating two versions that decide the
//! marker call `a/read_file` differently (each version's rule ids name
//! it; `b/read_file` is allowed by every version, by a rule naming it too)
//! and, now and then, a broken version. Every answer is one version's
//! whole decision (an allow is the server's answer to that very call; a
//! deny names a deny rule of a denying version), never an error; no call
//! sees an older version than one an earlier answer showed, in any
//! session; every decision has exactly one audit line, the same as the
//! host's answer, with the server called; and the gateway's RSS at the end
//! is within a bound of its RSS after warm-up (printed).
//!
//! 10,000 calls over 100 rewrites, in `cargo test` (and so in `.ci/run`),
//! paced over at least 15 s so that every rewrite is seen. The figures:
//!
//! ```sh
//! cargo test --test suite gateway_load -- --nocapture
//! ```

#![cfg(target_os = "linux")] // reads /proc
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcppol::pipeline::args_digest;
use serde_json::{json, Value};

use super::proxy::harness::proc_status_kib;

/// Host sessions at once, one call in flight each.
const SESSIONS: usize = 64;
/// The time between two rewrites: the store takes a change once the file
/// has been quiet for 50 ms, so closer ones would be taken as one.
const GAP: Duration = Duration::from_millis(150);
/// A generous bound on the gateway's peak RSS (64 sessions of 2 servers).
const MAX_PEAK_KIB: u64 = 512 * 1024;
/// The most the RSS may grow between warm-up (every session open, 1,000
/// calls answered) and the end.
const MAX_GROWTH_KIB: u64 = 64 * 1024;

/// Version `n` of the policy: even versions allow the marker call
/// (`a<n>`), odd ones deny it (`d<n>`); every version allows `b`'s tool
/// with `k<n>`.
fn version(n: usize) -> String {
    let marker = if n.is_multiple_of(2) {
        format!("allow a{n}: \"a/read_file\"")
    } else {
        format!("deny d{n}: \"a/read_file\"")
    };
    format!("policy load {{\n  default deny\n  {marker}\n  allow k{n}: \"b/read_file\"\n}}\n")
}

/// A version that does not load (the last good one stays in force).
const BROKEN: &str = "policy load {\n  default deny\n  deny oops:\n}\n";

/// The version a rule id names, and its kind (`a`, `d` or `k`).
fn rule_version(id: &str) -> (usize, char) {
    let n = id[1..]
        .parse()
        .unwrap_or_else(|_| panic!("not a rule of a version: {id}"));
    (n, id.chars().next().unwrap_or('?'))
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

/// One host session: a kept-alive HTTP/1.1 connection and its session id.
struct Session {
    addr: String,
    id: Option<String>,
    write: TcpStream,
    read: BufReader<TcpStream>,
}

impl Session {
    fn open(addr: &str) -> Session {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let read = BufReader::new(s.try_clone().unwrap());
        let mut session = Session {
            addr: addr.to_string(),
            id: None,
            write: s,
            read,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "load", "version": "1"}}});
        let (status, headers, body) = session.post(&init.to_string());
        assert_eq!(status, 200, "{body}");
        session.id = headers
            .into_iter()
            .find(|(k, _)| k == "mcp-session-id")
            .map(|(_, v)| v);
        assert!(session.id.is_some(), "no session id: {body}");
        let (status, _, _) =
            session.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(status, 202);
        let list = session.request(1, "tools/list", json!({}));
        let names: BTreeSet<&str> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no listing: {list}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names,
            BTreeSet::from(["a__read_file", "b__read_file"]),
            "{list}"
        );
        session
    }

    /// One POST; the status, the headers (lower-case names), the body.
    fn post(&mut self, body: &str) -> (u16, Vec<(String, String)>, String) {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(id) = &self.id {
            req.push_str(&format!(
                "Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.write.write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        self.read.read_line(&mut line).unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.read.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let header = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v);
        let mut out = Vec::new();
        if let Some(len) = header("content-length") {
            out.resize(len.parse().unwrap(), 0);
            self.read.read_exact(&mut out).unwrap();
        } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                line.clear();
                self.read.read_line(&mut line).unwrap();
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                self.read.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..size]);
            }
        }
        (status, headers, String::from_utf8(out).unwrap())
    }

    fn request(&mut self, id: usize, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, _, body) = self.post(&body.to_string());
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["id"], json!(id), "{v}");
        v
    }
}

/// The gateway's process, killed on drop (a failed assertion included).
struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the host got for one call.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Allowed,
    /// Denied by the rule of this version.
    Denied(usize),
}

/// The server call `i` goes to: each session alternates between the two.
fn server_of(i: usize) -> &'static str {
    if (i / SESSIONS).is_multiple_of(2) {
        "a"
    } else {
        "b"
    }
}

/// Starts the gateway on a free port of 127.0.0.1; its address.
fn start(dir: &Path, policy: &Path, audit: &Path, stderr: &Path) -> (Gateway, String) {
    let servers = dir.join("servers.json");
    let fault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault/server.py");
    let entry = json!({"command": "python3", "args": [fault, "echo"]});
    std::fs::write(
        &servers,
        json!({"mcpServers": {"a": entry, "b": entry}}).to_string(),
    )
    .unwrap();
    let child = Command::new(crate::common::MCPPOL)
        .arg("gateway")
        .arg("--policy")
        .arg(policy)
        .arg("--servers")
        .arg(&servers)
        .arg("--audit")
        .arg(audit)
        .args(["--listen", "127.0.0.1:0"])
        .args(["--max-sessions", &SESSIONS.to_string()])
        // 128 Python servers start at once: ample time on a busy machine.
        .args(["--start-timeout", "120s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    let g = Gateway(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = std::fs::read_to_string(stderr).unwrap_or_default();
        if let Some(addr) = log
            .split("addr=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            return (g, addr.to_string());
        }
        assert!(
            Instant::now() < deadline,
            "the gateway did not listen:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(calls: usize, rewrites: usize) {
    let dir = tempfile::tempdir().unwrap();
    // The policy in a folder of its own: the store watches the folder, and
    // the audit file's writes would keep it busy (docs/proxy.md).
    std::fs::create_dir(dir.path().join("policy")).unwrap();
    let policy = dir.path().join("policy/load.mcppol");
    std::fs::write(&policy, version(0)).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let stderr = dir.path().join("gateway.stderr");
    let (gateway, addr) = start(dir.path(), &policy, &audit, &stderr);
    let pid = gateway.0.id();

    // Every session open (its servers started) before the clock starts,
    // eight at a time.
    let opened = Instant::now();
    let mut sessions: Vec<Session> = Vec::with_capacity(SESSIONS);
    while sessions.len() < SESSIONS {
        let wave = (SESSIONS - sessions.len()).min(8);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..wave)
                .map(|_| s.spawn(|| Session::open(&addr)))
                .collect();
            sessions.extend(handles.into_iter().map(|h| h.join().unwrap()));
        });
    }
    let open_took = opened.elapsed();

    let started = Instant::now();
    // Call i is sent no earlier than its share of the whole span.
    let span = GAP * u32::try_from(rewrites + 1).unwrap();
    let not_before = |i: usize| started + span.mul_f64(i as f64 / calls as f64);
    // The newest version a deny had shown, in any session.
    let newest_shown = AtomicUsize::new(0);
    let received = AtomicUsize::new(0);
    let rss_warm = AtomicU64::new(0);
    let broken = AtomicUsize::new(0);
    // Per call: the answer, and the newest version shown when it was sent.
    let answers: Mutex<Vec<Option<(Answer, usize)>>> = Mutex::new(vec![None; calls]);
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in 1..=rewrites {
                let at = started + GAP * u32::try_from(k).unwrap();
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                // Every fifth rewrite is broken; the others alternate.
                if k.is_multiple_of(5) {
                    rewrite(&policy, BROKEN, k);
                    broken.fetch_add(1, Ordering::Relaxed);
                } else {
                    rewrite(&policy, &version(k), k);
                }
            }
        });
        for (first, mut session) in sessions.into_iter().enumerate() {
            let (answers, newest_shown, received, rss_warm) =
                (&answers, &newest_shown, &received, &rss_warm);
            s.spawn(move || {
                for i in (first..calls).step_by(SESSIONS) {
                    std::thread::sleep(not_before(i).saturating_duration_since(Instant::now()));
                    let floor = newest_shown.load(Ordering::SeqCst);
                    let server = server_of(i);
                    let m = session.request(
                        1_000 + i,
                        "tools/call",
                        json!({"name": format!("{server}__read_file"), "arguments": {"n": i}}),
                    );
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
                        let (n, kind) = rule_version(rule);
                        assert!(
                            server == "a" && kind == 'd' && n % 2 == 1,
                            "mixed versions: call {i} to {server}: {text}"
                        );
                        newest_shown.fetch_max(n, Ordering::SeqCst);
                        Answer::Denied(n)
                    } else {
                        // The server's answer to this very call (ids mapped right).
                        assert_eq!(text, format!("call {i}"), "{m}");
                        Answer::Allowed
                    };
                    answers.lock().unwrap()[i] = Some((answer, floor));
                    if received.fetch_add(1, Ordering::SeqCst) + 1 == 1_000.min(calls) {
                        rss_warm.store(proc_status_kib(pid, "VmRSS:"), Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let took = started.elapsed();
    let rss_end = proc_status_kib(pid, "VmRSS:");
    let peak = proc_status_kib(pid, "VmHWM:");
    let rss_warm = rss_warm.into_inner();
    let answers = answers.into_inner().unwrap();

    // Every decision is in the audit file, once, and is the host's answer.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines: Vec<Value> = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= calls || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(lines.len(), calls, "decisions missing from the audit file");
    let by_digest: HashMap<String, &Value> = lines
        .iter()
        .map(|l| (l["args_digest"].as_str().unwrap().to_string(), l))
        .collect();
    assert_eq!(by_digest.len(), calls, "a call audited twice");
    let mut versions = BTreeSet::new();
    let mut allowed = 0;
    for (i, answer) in answers.iter().enumerate() {
        let server = server_of(i);
        let line = by_digest
            .get(&args_digest(&json!({"n": i})))
            .unwrap_or_else(|| panic!("call {i} is not in the audit file"));
        assert_eq!(line["server"], server, "call {i}: {line}");
        let (n, kind) = rule_version(line["rule_id"].as_str().unwrap());
        // One version's whole: its rule and its verdict agree.
        let allow = match (server, kind) {
            ("a", 'a') | ("b", 'k') => true,
            ("a", 'd') => false,
            _ => panic!("call {i} to {server} decided by another server's rule: {line}"),
        };
        assert!(
            kind != 'a' || n % 2 == 0,
            "mixed versions: an allow rule of a denying version: {line}"
        );
        assert!(
            kind != 'd' || n % 2 == 1,
            "mixed versions: a deny rule of an allowing version: {line}"
        );
        assert_eq!(line["decision"], if allow { "allow" } else { "deny" });
        let Some((answer, floor)) = answer else {
            panic!("call {i} was not answered");
        };
        assert!(
            n >= *floor,
            "call {i} saw version {n} after an answer showed {floor}"
        );
        match answer {
            Answer::Allowed => {
                assert!(allow, "call {i}: answered allowed, audited {line}");
                allowed += 1;
            }
            Answer::Denied(d) => assert_eq!(*d, n, "call {i}: {line}"),
        }
        versions.insert(n);
    }
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    println!(
        "gateway load: {calls} calls from {SESSIONS} HTTP sessions (2 servers each, opened in {:.2} s), paced over at least {span:?}, {rewrites} rewrites ({} broken), in {:.2} s ({:.0} calls/s); {} versions decided, {allowed} allowed; gateway RSS after warm-up {rss_warm} KiB, at the end {rss_end} KiB, peak (VmHWM) {peak} KiB",
        open_took.as_secs_f64(),
        broken.load(Ordering::Relaxed),
        took.as_secs_f64(),
        calls as f64 / took.as_secs_f64(),
        versions.len()
    );
    assert!(
        versions.len() > rewrites / 4,
        "the rewrites were not seen: {versions:?}"
    );
    // A broken version was logged with its code, and never decided.
    assert!(log.contains("mcppol::parse"), "{log}");
    assert!(rss_warm > 0 && peak > 0);
    assert!(peak < MAX_PEAK_KIB, "peak RSS {peak} KiB");
    assert!(
        rss_end.saturating_sub(rss_warm) < MAX_GROWTH_KIB,
        "RSS grew from {rss_warm} KiB to {rss_end} KiB"
    );
    drop(gateway);
}

#[test]
fn gateway_load_64_sessions_10000_calls_while_the_policy_is_rewritten_100_times() {
    run(10_000, 100);
}
