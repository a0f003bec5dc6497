//! The relay side by side (issue 29): a raw JSON-RPC client times
//! `tools/call` one at a time, 8 in flight (one session) and from 64
//! sessions at once (one call in flight each; each HTTP session its own,
//! the stdio routes' one session with 64 in flight) against a server called
//! directly, through `mcppol proxy` (stdio to stdio), through `mcppol
//! gateway --listen` (stdio server, streamable HTTP host) and, when
//! `MCPPOL_BENCH_MCP_PROXY` names its binary, through the `mcp-proxy`
//! crate (stdio server, streamable HTTP host: the only way it relays), on
//! a minimal echo server (this program) and on the real server-everything
//! (`.e2e/node`, when installed). The runs are interleaved block by block,
//! so a busy moment hits every relay alike. Each relay's stderr goes to a
//! file, as MCP hosts capture it.
//!
//! It prints, per server and mode, each route's p50, p90 and p99, what the
//! relay adds to the direct stdio call at each, calls per second, the
//! relay's CPU per call (every thread of its process, from
//! `/proc/PID/task/*/schedstat`) and its peak RSS (`VmHWM`). Linux only.
//!
//!     benches/relay.sh                 # builds mcp-proxy once, then this
//!     MCPPOL_BENCH_CALLS=2000 cargo bench --bench relay
//!
//! The HTTP client is a minimal HTTP/1.1 one over kept-alive connections
//! (one per call in flight), reading a JSON or an SSE answer; its own cost
//! is in the HTTP routes' figures and not in the direct ones, so an HTTP
//! route's "added" is the relay and the HTTP hop together.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const POLICY: &str = r#"
policy bench {
  default deny
  allow "echo/echo"
  allow "everything/echo"
}
"#;

/// Calls in flight in the concurrent mode.
const IN_FLIGHT: usize = 8;
/// Host sessions at once in the sessions mode: one call in flight each,
/// each HTTP session its own (for `mcppol gateway`, its own servers); the
/// stdio routes have one session, with this many calls in flight.
const SESSIONS: usize = 64;
/// The modes: calls in flight, and how each is named in the printout.
const MODES: [(usize, &str); 3] = [
    (1, "one at a time"),
    (IN_FLIGHT, "8 in flight (one HTTP session)"),
    (SESSIONS, "64 sessions, one call in flight each"),
];

fn echo_server() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        let result = match msg["method"].as_str() {
            Some("initialize") => {
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "echo", "version": "1"}})
            }
            Some("tools/list") => {
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object",
                       "properties": {"message": {"type": "string"}}}}]})
            }
            Some("tools/call") => {
                json!({"content": [{"type": "text", "text": msg["params"]["arguments"]["message"]}]})
            }
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {},
           "clientInfo": {"name": "bench", "version": "1"}})
}

fn call_line(id: u64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {"message": format!("hello {id}")}}})
    .to_string()
}

fn check_answer(v: &Value, id: u64) {
    assert_eq!(
        v["result"]["content"][0]["text"]
            .as_str()
            .map(|t| t.ends_with(&format!("hello {id}"))),
        Some(true),
        "{v}"
    );
}

/// A JSON-RPC peer over a child's pipes.
struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Stdio_ {
    fn start(mut cmd: Command, stderr: &Path) -> Stdio_ {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Stdio_ {
            child,
            stdin,
            stdout,
            next: 1,
        };
        s.request("initialize", initialize_params());
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        s.request("tools/list", json!({}));
        s
    }

    fn read_answer(&mut self) -> Value {
        let mut answer = String::new();
        loop {
            answer.clear();
            assert!(
                self.stdout.read_line(&mut answer).unwrap() > 0,
                "the server closed"
            );
            let v: Value = serde_json::from_str(&answer).unwrap();
            if v.get("id").is_some() && v.get("method").is_none() {
                return v;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let v = self.read_answer();
        assert_eq!(v["id"], json!(id), "{v}");
        v
    }

    /// `n` calls with `k` in flight (a new one sent as each is answered).
    fn calls(&mut self, tool: &str, n: usize, k: usize) -> Vec<Duration> {
        let mut started: HashMap<u64, Instant> = HashMap::new();
        let mut times = Vec::with_capacity(n);
        let mut sent = 0;
        while times.len() < n {
            while sent < n && started.len() < k {
                let id = self.next;
                self.next += 1;
                started.insert(id, Instant::now());
                writeln!(self.stdin, "{}", call_line(id, tool)).unwrap();
                sent += 1;
            }
            self.stdin.flush().unwrap();
            let v = self.read_answer();
            let id = v["id"].as_u64().unwrap();
            times.push(started.remove(&id).unwrap().elapsed());
            check_answer(&v, id);
        }
        times
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One kept-alive HTTP/1.1 connection to a streamable HTTP endpoint.
struct Http {
    addr: String,
    path: String,
    session: Option<String>,
    conn: Option<(TcpStream, BufReader<TcpStream>)>,
}

impl Http {
    fn post(&mut self, body: &str) -> (u16, Vec<(String, String)>, String) {
        if self.conn.is_none() {
            let s = TcpStream::connect(&self.addr).unwrap();
            s.set_nodelay(true).unwrap();
            let r = BufReader::new(s.try_clone().unwrap());
            self.conn = Some((s, r));
        }
        let (w, r) = self.conn.as_mut().unwrap();
        let mut req = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.addr,
            body.len()
        );
        if let Some(s) = &self.session {
            req.push_str(&format!(
                "Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        w.write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let header = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
        let mut out = Vec::new();
        if let Some(len) = header("content-length") {
            out.resize(len.parse().unwrap(), 0);
            r.read_exact(&mut out).unwrap();
        } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                line.clear();
                r.read_line(&mut line).unwrap();
                let size = usize::from_str_radix(line.trim(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                r.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..size]);
            }
        } else {
            r.read_to_end(&mut out).unwrap();
            self.conn = None;
        }
        (status, headers, String::from_utf8(out).unwrap())
    }

    /// The JSON-RPC answer in a body, JSON or SSE.
    fn answer(body: &str) -> Value {
        if body.trim_start().starts_with('{') {
            return serde_json::from_str(body).unwrap();
        }
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some() && v.get("method").is_none())
            .unwrap_or_else(|| panic!("no answer in {body:?}"))
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, headers, body) = self.post(&body.to_string());
        assert_eq!(status, 200, "{body}");
        if self.session.is_none() {
            self.session = headers
                .iter()
                .find(|(k, _)| k == "mcp-session-id")
                .map(|(_, v)| v.clone());
        }
        Http::answer(&body)
    }

    /// Opens a session, waiting up to 60 s for the relay to listen.
    fn open(addr: &str, path: &str) -> Http {
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "nothing listens on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut h = Http {
            addr: addr.to_string(),
            path: path.to_string(),
            session: None,
            conn: None,
        };
        h.request(0, "initialize", initialize_params());
        let (status, _, _) = h.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(status == 202 || status == 200, "{status}");
        h.request(1, "tools/list", json!({}));
        h
    }

    fn with_session(&self) -> Http {
        Http {
            addr: self.addr.clone(),
            path: self.path.clone(),
            session: self.session.clone(),
            conn: None,
        }
    }
}

/// How a route is reached.
enum Wire {
    Stdio(Stdio_),
    /// The relay's process, one connection per call in flight of one
    /// session, and one connection per session of the sessions mode.
    Http(Child, Vec<Http>, Vec<Http>),
}

struct Route {
    name: &'static str,
    tool: String,
    wire: Wire,
    /// The relay's process (none for the direct route).
    relay: Option<u32>,
    next_id: u64,
    times: [Vec<Duration>; 3],
    wall: [Duration; 3],
    cpu_ns: [u64; 3],
}

impl Route {
    fn new(name: &'static str, tool: &str, wire: Wire, relay: bool) -> Route {
        let pid = match &wire {
            Wire::Stdio(s) => s.child.id(),
            Wire::Http(c, _, _) => c.id(),
        };
        Route {
            name,
            tool: tool.to_string(),
            wire,
            relay: relay.then_some(pid),
            next_id: 1000,
            times: [Vec::new(), Vec::new(), Vec::new()],
            wall: [Duration::ZERO; 3],
            cpu_ns: [0; 3],
        }
    }

    /// Times a block of `n` calls in one of the [`MODES`], recording them
    /// unless `warm`.
    fn block(&mut self, mode: usize, n: usize, warm: bool) {
        let k = MODES[mode].0;
        let cpu = self.relay.map(cpu_ns);
        let started = Instant::now();
        let times = match &mut self.wire {
            Wire::Stdio(s) => s.calls(&self.tool, n, k),
            Wire::Http(_, conns, sessions) => {
                let conns = if mode == 2 {
                    &mut sessions[..]
                } else {
                    &mut conns[..k]
                };
                let base = self.next_id;
                self.next_id += n as u64;
                let tool = &self.tool;
                std::thread::scope(|scope| {
                    let handles: Vec<_> = conns
                        .iter_mut()
                        .enumerate()
                        .map(|(c, conn)| {
                            scope.spawn(move || {
                                let mut times = Vec::new();
                                for i in (c..n).step_by(k) {
                                    let id = base + i as u64;
                                    let body = call_line(id, tool);
                                    let t = Instant::now();
                                    let (status, _, body) = conn.post(&body);
                                    let v = Http::answer(&body);
                                    times.push(t.elapsed());
                                    assert_eq!(status, 200);
                                    check_answer(&v, id);
                                }
                                times
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .flat_map(|h| h.join().unwrap())
                        .collect()
                })
            }
        };
        if warm {
            return;
        }
        self.wall[mode] += started.elapsed();
        if let (Some(pid), Some(before)) = (self.relay, cpu) {
            self.cpu_ns[mode] += cpu_ns(pid) - before;
        }
        self.times[mode].extend(times);
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        if let Wire::Http(child, _, _) = &mut self.wire {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The CPU time of every thread of a process so far.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server: its id, how to start it, its environment.
struct Server {
    id: &'static str,
    command: Vec<String>,
    env: Vec<(String, String)>,
}

impl Server {
    fn command(&self) -> Command {
        let mut c = Command::new(&self.command[0]);
        c.args(&self.command[1..]);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

fn routes(server: &Server, dir: &Path, policy: &Path) -> Vec<Route> {
    let log = |name: &str| dir.join(format!("{}-{name}.stderr", server.id));
    let mut routes = vec![Route::new(
        "direct",
        "echo",
        Wire::Stdio(Stdio_::start(server.command(), &log("direct"))),
        false,
    )];
    // An earlier build beside this one, in the same run: the figures
    // before and after a change.
    if let Some(before) = std::env::var_os("MCPPOL_BENCH_BEFORE") {
        let before = PathBuf::from(before);
        mcppol_routes(
            &mut routes,
            server,
            dir,
            policy,
            &before,
            ["proxy (before)", "gateway (before)"],
        );
    }
    let mcppol = Path::new(env!("CARGO_BIN_EXE_mcppol"));
    mcppol_routes(
        &mut routes,
        server,
        dir,
        policy,
        mcppol,
        ["mcppol proxy", "mcppol gateway"],
    );
    mcp_proxy_route(&mut routes, server, dir);

    routes
}

/// The routes through `mcppol proxy` and `mcppol gateway` of one build.
fn mcppol_routes(
    routes: &mut Vec<Route>,
    server: &Server,
    dir: &Path,
    policy: &Path,
    mcppol: &Path,
    names: [&'static str; 2],
) {
    let log = |name: &str| dir.join(format!("{}-{}.stderr", server.id, name.replace(' ', "-")));
    let mut proxy = Command::new(mcppol);
    proxy
        .args(["proxy", "--policy"])
        .arg(policy)
        .args(["--server-id", server.id, "--"])
        .args(&server.command)
        .envs(server.env.iter().map(|(k, v)| (k, v)));
    routes.push(Route::new(
        names[0],
        "echo",
        Wire::Stdio(Stdio_::start(proxy, &log(names[0]))),
        true,
    ));

    let servers = dir.join(format!("{}-servers.json", server.id));
    let env: serde_json::Map<String, Value> = server
        .env
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    std::fs::write(
        &servers,
        json!({"mcpServers": {server.id: {"command": server.command[0],
               "args": server.command[1..], "env": env}}})
        .to_string(),
    )
    .unwrap();
    let port = free_port();
    let gateway = Command::new(mcppol)
        .args(["gateway", "--policy"])
        .arg(policy)
        .arg("--servers")
        .arg(&servers)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--max-sessions", &(SESSIONS + 1).to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log(names[1])).unwrap())
        .spawn()
        .unwrap();
    routes.push(http_route(
        names[1],
        &format!("{}__echo", server.id),
        gateway,
        port,
        "/mcp",
    ));
}

/// The route through the `mcp-proxy` crate, when its binary is given.
fn mcp_proxy_route(routes: &mut Vec<Route>, server: &Server, dir: &Path) {
    let log = |name: &str| dir.join(format!("{}-{name}.stderr", server.id));

    if let Some(bin) = std::env::var_os("MCPPOL_BENCH_MCP_PROXY") {
        let port = free_port();
        let config = dir.join(format!("{}-mcp-proxy.toml", server.id));
        let env: String = server
            .env
            .iter()
            .map(|(k, v)| format!("{k} = {}\n", json!(v)))
            .collect();
        std::fs::write(
            &config,
            format!(
                "[proxy]\nname = \"bench\"\nseparator = \"__\"\n\n[proxy.listen]\n\
                 host = \"127.0.0.1\"\nport = {port}\n\n[[backends]]\nname = \"{}\"\n\
                 transport = \"stdio\"\ncommand = {}\nargs = {}\n\n[backends.env]\n{env}",
                server.id,
                json!(server.command[0]),
                json!(server.command[1..]),
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log("mcp-proxy")).unwrap())
            .spawn()
            .unwrap();
        routes.push(http_route(
            "mcp-proxy crate",
            &format!("{}__echo", server.id),
            child,
            port,
            "/",
        ));
    }
}

fn http_route(name: &'static str, tool: &str, child: Child, port: u16, path: &str) -> Route {
    let addr = format!("127.0.0.1:{port}");
    let first = Http::open(&addr, path);
    let mut conns: Vec<Http> = (1..IN_FLIGHT).map(|_| first.with_session()).collect();
    conns.insert(0, first);
    let sessions = (0..SESSIONS).map(|_| Http::open(&addr, path)).collect();
    Route::new(name, tool, Wire::Http(child, conns, sessions), true)
}

fn report(server: &Server, routes: &[Route]) {
    for (mode, (_, label)) in MODES.iter().enumerate() {
        let direct = {
            let mut d = routes[0].times[mode].clone();
            d.sort();
            [0.5, 0.9, 0.99].map(|p| percentile(&d, p))
        };
        println!(
            "\n{} server, tools/call {label}, {} calls per route",
            server.id,
            routes[0].times[mode].len()
        );
        println!(
            "  {:<17} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8} | {:>8} {:>9} {:>9}",
            "route",
            "p50 us",
            "p90 us",
            "p99 us",
            "+p50",
            "+p90",
            "+p99",
            "calls/s",
            "cpu us/c",
            "peak KiB"
        );
        for r in routes {
            let mut t = r.times[mode].clone();
            t.sort();
            let p = [0.5, 0.9, 0.99].map(|q| percentile(&t, q));
            let rate = t.len() as f64 / r.wall[mode].as_secs_f64();
            let (cpu, rss) = match r.relay {
                Some(pid) => (
                    format!("{:.1}", r.cpu_ns[mode] as f64 / t.len() as f64 / 1e3),
                    peak_rss_kib(pid).to_string(),
                ),
                None => ("-".into(), "-".into()),
            };
            println!(
                "  {:<17} {:>8.1} {:>8.1} {:>8.1} | {:>8.1} {:>8.1} {:>8.1} | {:>8.0} {:>9} {:>9}",
                r.name,
                p[0],
                p[1],
                p[2],
                p[0] - direct[0],
                p[1] - direct[1],
                p[2] - direct[2],
                rate,
                cpu,
                rss
            );
        }
    }
}

fn run(server: &Server, dir: &Path, policy: &Path, calls: usize) {
    let mut routes = routes(server, dir, policy);
    let block = (calls / 10).max(SESSIONS);
    for r in &mut routes {
        for mode in 0..MODES.len() {
            r.block(mode, block, true);
        }
    }
    while routes[0].times[0].len() < calls {
        for mode in 0..MODES.len() {
            for r in &mut routes {
                r.block(mode, block, false);
            }
        }
    }
    report(server, &routes);
}

/// A process's resident set now (`VmRSS`), in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One gateway process serving `n` host sessions over HTTP (each with its
/// own echo server, a child of the gateway): the gateway's own memory
/// with one session, and with all of them, each having made a call.
fn sessions(server: &Server, dir: &Path, policy: &Path, n: usize) {
    let servers = dir.join("sessions-servers.json");
    let env: serde_json::Map<String, Value> = server
        .env
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    std::fs::write(
        &servers,
        json!({"mcpServers": {server.id: {"command": server.command[0],
               "args": server.command[1..], "env": env}}})
        .to_string(),
    )
    .unwrap();
    let port = free_port();
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["gateway", "--policy"])
        .arg(policy)
        .arg("--servers")
        .arg(&servers)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--max-sessions", &(n + 1).to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sessions.stderr")).unwrap())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let tool = format!("{}__echo", server.id);
    let mut open = Vec::new();
    let mut one = 0;
    for i in 0..n {
        let mut h = Http::open(&addr, "/mcp");
        let v = h.request(
            7,
            "tools/call",
            json!({"name": tool, "arguments": {"message": "hello 7"}}),
        );
        check_answer(&v, 7);
        open.push(h);
        if i == 0 {
            one = rss_kib(gateway.id());
        }
    }
    let all = rss_kib(gateway.id());
    let children = children_of(gateway.id());
    let children_kib: u64 = children.iter().map(|&pid| rss_kib(pid)).sum();
    println!(
        "
mcppol gateway, {n} HTTP sessions in one process (each its own {} server): \
         VmRSS {} KiB with 1, {} KiB with {n} ({:.0} KiB a session more), peak {} KiB; \
         its {} children (the servers) {} KiB in all ({:.0} KiB each)",
        server.id,
        one,
        all,
        (all.saturating_sub(one)) as f64 / (n - 1).max(1) as f64,
        peak_rss_kib(gateway.id()),
        children.len(),
        children_kib,
        children_kib as f64 / children.len().max(1) as f64
    );
    let _ = gateway.kill();
    let _ = gateway.wait();
}

/// The processes whose parent is `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| {
            // `PID (COMM) STATE PPID ...`: the command may hold spaces.
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn everything() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".e2e/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    p.exists().then_some(p)
}

fn main() {
    if std::env::var_os("MCPPOL_BENCH_ECHO_SERVER").is_some() {
        echo_server();
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once, short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let calls: usize = std::env::var("MCPPOL_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 40 } else { 2000 });
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("bench.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let me = std::env::current_exe().unwrap();
    let echo = Server {
        id: "echo",
        command: vec![me.to_string_lossy().into_owned()],
        env: vec![("MCPPOL_BENCH_ECHO_SERVER".into(), "1".into())],
    };
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    run(&echo, dir.path(), &policy, calls);
    let n = std::env::var("MCPPOL_BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 3 } else { 100 });
    sessions(&echo, dir.path(), &policy, n);
    match everything() {
        Some(index) if !quick => {
            let everything = Server {
                id: "everything",
                command: vec![
                    "node".into(),
                    index.to_string_lossy().into_owned(),
                    "stdio".into(),
                ],
                env: Vec::new(),
            };
            run(&everything, dir.path(), &policy, calls);
        }
        Some(_) => {}
        None => println!("\nserver-everything: skipped (.ci/e2e-deps installs it into .e2e/node)"),
    }
}
