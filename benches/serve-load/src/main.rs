//! `mcppol serve`'s cost per decision over loopback HTTP: a small load
//! generator on blocking sockets with keep-alive (one thread a
//! connection, no HTTP library, so the client takes as little of the
//! machine's CPU as it can), against the real binary (its path the first
//! argument) serving the 100-rule policy of the hook benchmarks.
//!
//! - latency: `POST /v1/decide` on one connection, one request at a time:
//!   median, p90, p99 (and the same for `POST /v1/hooks/claude`);
//! - throughput: decisions a second with 2, 4 and 8 connections, with the
//!   CPU the client and the server used (from /proc: they share the
//!   machine's cores, so the client's share is the server's loss).
//!
//! `benches/serve.sh` builds both and runs it (docs/hosts.md, "Speed"):
//! `mcppol-serve-load target/release/mcppol`; `MCPPOL_BENCH_REQUESTS`
//! (default 20000) and `MCPPOL_BENCH_SECONDS` (default 5) set the sizes.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // a benchmark stops on a broken fixture

#[path = "../../common/hook_policy.rs"]
mod hook_policy;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The decision every request gets: allowed by the policy's `shell` rule,
/// after the 100 rules are looked through.
const DECIDE_BODY: &str = r#"{"tool": "claude/Bash", "args": {"command": "cargo test --all", "description": "test"}, "cwd": "/home/dev/project"}"#;
const HOOK_BODY: &str = r#"{"session_id": "5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11", "transcript_path": "/home/dev/.claude/projects/p/5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11.jsonl", "cwd": "/home/dev/project", "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "cargo test --all", "description": "test"}, "tool_use_id": "toolu_01"}"#;

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(mcppol: &Path, policy: &Path, state: &Path) -> Server {
    let mut child = Command::new(mcppol)
        .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(policy)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcppol serve");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("mcppol serve: listening on http://")
        .unwrap_or_else(|| panic!("no address: {line:?}"))
        .to_string();
    Server { child, addr }
}

/// One keep-alive connection that sends the same request again and again.
struct Connection {
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
}

impl Connection {
    fn open(addr: &str, path: &str, body: &str) -> Connection {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        Connection {
            reader: BufReader::new(stream),
            request: request.into_bytes(),
            line: String::new(),
            body: Vec::new(),
        }
    }

    /// Sends the request and reads the whole answer; its body is `self.body`.
    fn call(&mut self) {
        self.reader.get_mut().write_all(&self.request).unwrap();
        let mut length = None;
        let mut first = true;
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line).unwrap() == 0 {
                panic!("the server closed the connection");
            }
            if first {
                assert!(self.line.starts_with("HTTP/1.1 200"), "{:?}", self.line);
                first = false;
                continue;
            }
            if self.line == "\r\n" {
                break;
            }
            if let Some((name, value)) = self.line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>().unwrap());
                }
            }
        }
        let length = length.expect("an answer with a Content-Length");
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body).unwrap();
    }
}

/// (user + system) CPU ticks of a process, from /proc/PID/stat.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn latency(server: &Server, name: &str, path: &str, body: &str, requests: u64) {
    let mut conn = Connection::open(&server.addr, path, body);
    conn.call();
    let first = String::from_utf8_lossy(&conn.body).into_owned();
    assert!(
        first.contains("\"decision\":\"allow\"")
            || first.contains("\"permissionDecision\":\"allow\""),
        "{name}: not an allow: {first}"
    );
    for _ in 0..requests / 10 {
        conn.call();
    }
    let mut times = Vec::with_capacity(requests as usize);
    for _ in 0..requests {
        let start = Instant::now();
        conn.call();
        times.push(start.elapsed());
    }
    times.sort();
    let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "{name:<34} median {:>7.1} us  p90 {:>7.1} us  p99 {:>7.1} us  max {:>8.1} us  ({requests} requests, 1 connection)",
        micros(at(0.5)),
        micros(at(0.9)),
        micros(at(0.99)),
        micros(times[times.len() - 1]),
    );
}

fn throughput(server: &Server, connections: usize, seconds: u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let server_pid = server.child.id().to_string();
    let mut conns: Vec<Connection> = (0..connections)
        .map(|_| Connection::open(&server.addr, "/v1/decide", DECIDE_BODY))
        .collect();
    for c in &mut conns {
        c.call();
    }
    let client_before = cpu_ticks("self");
    let server_before = cpu_ticks(&server_pid);
    let start = Instant::now();
    let threads: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let stop = Arc::clone(&stop);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    conn.call();
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    // USER_HZ is 100 on Linux.
    let share = |ticks: u64| ticks as f64 / 100.0 / elapsed * 100.0;
    let client = share(cpu_ticks("self") - client_before);
    let server_cpu = share(cpu_ticks(&server_pid) - server_before);
    let n = done.load(Ordering::Relaxed);
    println!(
        "/v1/decide, {connections} connections: {:>8.0} decisions/s  (server CPU {server_cpu:.0}%, client CPU {client:.0}%, of {}% on this machine; {seconds} s)",
        n as f64 / elapsed,
        std::thread::available_parallelism().map(|n| n.get() * 100).unwrap_or(0),
    );
}

fn main() {
    let Some(mcppol) = std::env::args_os().nth(1) else {
        eprintln!("usage: mcppol-serve-load PATH/TO/mcppol (a release build)");
        std::process::exit(2);
    };
    let requests = env_number("MCPPOL_BENCH_REQUESTS", 20_000).max(10);
    let seconds = env_number("MCPPOL_BENCH_SECONDS", 5).max(1);
    let dir = std::env::temp_dir().join(format!("mcppol-serve-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("bench.mcppol");
    std::fs::write(&policy, hook_policy::policy(100)).unwrap();
    let server = start(Path::new(&mcppol), &policy, &dir.join("state"));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "mcppol serve, 100 rules, loopback; 1-min load before: {}",
        load.split_whitespace().next().unwrap_or("?")
    );
    latency(
        &server,
        "POST /v1/decide",
        "/v1/decide",
        DECIDE_BODY,
        requests,
    );
    latency(
        &server,
        "POST /v1/hooks/claude (PreToolUse)",
        "/v1/hooks/claude",
        HOOK_BODY,
        requests / 4,
    );
    for connections in [2, 4, 8] {
        throughput(&server, connections, seconds);
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
