//! `mcppol gateway --listen` over loopback HTTP in front of the scripted
//! stdio server (tests/fixtures/proxy): sessions, the Origin check, bearer
//! tokens naming the principal the policy sees, and the HTTP errors.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::proxy::harness::scripted_server;

const POLICY: &str = r#"
policy gw {
  default deny
  allow "a/echo" when principal == "dana"
  allow "a/read_file", "a/change"
}
"#;

/// A gateway listening on a free port of 127.0.0.1, with `extra` flags.
pub(crate) struct Gateway {
    child: Child,
    pub(crate) addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start(dir: &Path, extra: &[&str]) -> Gateway {
    start_with(dir, POLICY, &["a"], extra)
}

/// A gateway with this policy in front of the scripted server under each
/// of `ids`; `TOKENS` in `extra` is a tokens file of dana's and omar's.
pub(crate) fn start_with(dir: &Path, policy_text: &str, ids: &[&str], extra: &[&str]) -> Gateway {
    start_with_env(dir, policy_text, ids, extra, &[])
}

/// [`start_with`], the gateway (and so its servers) given `env` too.
pub(crate) fn start_with_env(
    dir: &Path,
    policy_text: &str,
    ids: &[&str],
    extra: &[&str],
    env: &[(&str, &str)],
) -> Gateway {
    let policy = dir.join("gw.mcppol");
    std::fs::write(&policy, policy_text).unwrap();
    let servers = dir.join("servers.json");
    let entry = json!({"command": "python3", "args": [scripted_server()]});
    let all: serde_json::Map<String, Value> = ids
        .iter()
        .map(|id| (id.to_string(), entry.clone()))
        .collect();
    std::fs::write(&servers, json!({ "mcpServers": all }).to_string()).unwrap();
    // dana's and omar's tokens (the file holds them as they are: a test).
    let tokens = dir.join("tokens.json");
    std::fs::write(
        &tokens,
        json!({"tokens": [
            {"token": "dana-token-0123456789abcdef", "principal": "dana"},
            {"token": "omar-token-0123456789abcdef", "principal": "omar"}]})
        .to_string(),
    )
    .unwrap();
    let stderr = dir.join("gateway.stderr");
    let child = Command::new(crate::common::MCPPOL)
        .arg("gateway")
        .arg("--policy")
        .arg(&policy)
        .arg("--servers")
        .arg(&servers)
        .args(["--listen", "127.0.0.1:0"])
        .args(
            extra
                .iter()
                .map(|a| a.replace("TOKENS", tokens.to_str().unwrap())),
        )
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    // Killed on drop, a failed wait included.
    let mut g = Gateway {
        child,
        addr: String::new(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(addr) = log
            .split("addr=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            g.addr = addr.to_string();
            return g;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway did not listen:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.1 exchange: the status, the headers (lower-case names), the
/// body.
pub(crate) fn http(
    g: &Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(&g.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {}\r\nconnection: close\r\ncontent-length: {}\r\n",
        g.addr,
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// Opens a session as `token`'s holder; its id.
pub(crate) fn open(g: &Gateway, auth: &[(&str, &str)]) -> String {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json"),
    ];
    headers.extend_from_slice(auth);
    let (status, h, body) = http(g, "POST", "/mcp", &headers, INIT);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "mcppol-gateway");
    header(&h, "mcp-session-id").unwrap().to_string()
}

pub(crate) fn call(
    g: &Gateway,
    session: &str,
    auth: &[(&str, &str)],
    tool: &str,
    args: Value,
) -> Value {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("mcp-session-id", session),
    ];
    headers.extend_from_slice(auth);
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let (status, _, body) = http(g, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn sessions_the_origin_check_and_the_http_errors() {
    let dir = tempfile::tempdir().unwrap();
    let g = start(
        dir.path(),
        &[
            "--allow-origin",
            "https://app.example.com",
            "--max-line-bytes",
            "1048576",
        ],
    );
    let (status, _, body) = http(&g, "GET", "/healthz", &[], "");
    assert_eq!((status, body.trim()), (200, "ok"));
    // A browser page of another origin cannot call (DNS rebinding); this
    // machine's and the allowed one can.
    let (status, _, _) = http(
        &g,
        "POST",
        "/mcp",
        &[("origin", "https://evil.example")],
        INIT,
    );
    assert_eq!(status, 403);
    let (status, _, _) = http(
        &g,
        "POST",
        "/mcp",
        &[
            ("origin", "https://app.example.com"),
            ("accept", "application/json"),
        ],
        INIT,
    );
    assert_eq!(status, 200);
    let session = open(&g, &[("origin", "http://localhost:6274")]);
    let read = call(&g, &session, &[], "a__read_file", json!({"path": "/srv/x"}));
    assert_eq!(
        read["result"]["content"][0]["text"], "contents of /srv/x",
        "{read}"
    );
    // Without a principal, `principal == "dana"` does not match.
    let echo = call(&g, &session, &[], "a__echo", json!({}));
    assert_eq!(echo["result"]["isError"], true, "{echo}");

    let tools = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let (status, _, _) = http(&g, "POST", "/mcp", &[], tools);
    assert_eq!(status, 400, "no session header");
    let (status, _, _) = http(&g, "POST", "/mcp", &[("mcp-session-id", "0123")], tools);
    assert_eq!(status, 404, "an unknown session");
    let (status, _, _) = http(&g, "GET", "/mcp", &[("mcp-session-id", &session)], "");
    assert_eq!(status, 406, "a GET that does not accept an event stream");
    let (status, h, _) = http(&g, "PUT", "/mcp", &[("mcp-session-id", &session)], "");
    assert_eq!(
        (status, header(&h, "allow")),
        (405, Some("GET, POST, DELETE"))
    );
    let (status, _, _) = http(
        &g,
        "POST",
        "/mcp",
        &[("mcp-session-id", &session)],
        "[1, 2]",
    );
    assert_eq!(status, 400, "a batch");
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{{"x":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let (status, _, _) = http(&g, "POST", "/mcp", &[("mcp-session-id", &session)], &big);
    assert_eq!(status, 413, "a body over --max-line-bytes");

    // An event stream when the client accepts one: the answer, then the end.
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "a__read_file", "arguments": {"path": "/srv/y"}}});
    let (status, h, text) = http(
        &g,
        "POST",
        "/mcp",
        &[
            ("mcp-session-id", &session),
            ("accept", "application/json, text/event-stream"),
        ],
        &body.to_string(),
    );
    assert_eq!(
        (status, header(&h, "content-type")),
        (200, Some("text/event-stream"))
    );
    assert!(
        text.contains("data: {") && text.contains("contents of /srv/y"),
        "{text}"
    );

    // DELETE ends the session: its server is stopped, its id is gone.
    let (status, _, _) = http(&g, "DELETE", "/mcp", &[("mcp-session-id", &session)], "");
    assert_eq!(status, 204);
    let (status, _, _) = http(&g, "POST", "/mcp", &[("mcp-session-id", &session)], tools);
    assert_eq!(status, 404);
}

#[test]
fn a_bearer_token_names_the_principal_and_no_token_is_401() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let g = start(
        dir.path(),
        &[
            "--tokens",
            "TOKENS",
            "--max-sessions",
            "2",
            "--audit",
            audit.to_str().unwrap(),
        ],
    );
    let (status, h, _) = http(&g, "POST", "/mcp", &[("accept", "application/json")], INIT);
    assert_eq!(
        (status, header(&h, "www-authenticate")),
        (401, Some("Bearer"))
    );
    let bad = [("authorization", "Bearer not-a-known-token-0123456789")];
    let (status, _, _) = http(&g, "POST", "/mcp", &bad, INIT);
    assert_eq!(status, 401);
    let dana = [("authorization", "Bearer dana-token-0123456789abcdef")];
    let omar = [("authorization", "Bearer omar-token-0123456789abcdef")];
    let d = open(&g, &dana);
    let o = open(&g, &omar);
    // One policy, two callers: dana may echo, omar may not.
    let echoed = call(&g, &d, &dana, "a__echo", json!({"n": 1}));
    assert_eq!(
        echoed["result"]["content"][0]["text"], r#"{"n": 1}"#,
        "{echoed}"
    );
    let refused = call(&g, &o, &omar, "a__echo", json!({"n": 1}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    // Each audit line names who called.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let who: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["principal"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(who, [("dana", "allow"), ("omar", "deny")], "{lines:?}");
    // A session is its caller's: omar cannot use dana's.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
    let (status, _, _) = http(
        &g,
        "POST",
        "/mcp",
        &[("mcp-session-id", &d), omar[0]],
        &body,
    );
    assert_eq!(status, 403);
    // --max-sessions 2: a third is refused until one ends.
    let (status, _, _) = http(
        &g,
        "POST",
        "/mcp",
        &[dana[0], ("accept", "application/json")],
        INIT,
    );
    assert_eq!(status, 503);
    let (status, _, _) = http(&g, "DELETE", "/mcp", &[("mcp-session-id", &o), omar[0]], "");
    assert_eq!(status, 204);
    open(&g, &dana);
    drop(g);
}

/// Reads `s` until `text` has come (or the peer closes); what was read.
fn read_until(s: &mut TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(text) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) => panic!(
                "reading the GET stream: {e}; read so far:\n{}",
                String::from_utf8_lossy(&seen)
            ),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn a_get_stream_brings_a_json_only_client_the_servers_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let g = start(dir.path(), &[]);
    let session = open(&g, &[]);
    let (status, _, _) = http(&g, "GET", "/mcp", &[("accept", "text/event-stream")], "");
    assert_eq!(status, 400, "a GET without a session");
    // The session's GET stream, held open.
    let mut get = TcpStream::connect(&g.addr).unwrap();
    get.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\r\n",
        g.addr
    );
    get.write_all(req.as_bytes()).unwrap();
    let head = read_until(&mut get, "\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    // One a session.
    let (status, _, _) = http(
        &g,
        "GET",
        "/mcp",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &session),
        ],
        "",
    );
    assert_eq!(status, 409, "a second GET stream");
    // A call answered with JSON; the server's `list_changed` comes on the
    // GET stream, not in the POST's answer.
    let changed = call(&g, &session, &[], "a__change", json!({}));
    assert_eq!(
        changed["result"]["content"][0]["text"], "changed",
        "{changed}"
    );
    let events = read_until(&mut get, "notifications/tools/list_changed");
    assert!(
        events.contains(r#""method":"notifications/tools/list_changed""#),
        "{events}"
    );
    // The session ends: so does its stream.
    let (status, _, _) = http(&g, "DELETE", "/mcp", &[("mcp-session-id", &session)], "");
    assert_eq!(status, 204);
    // (the chunked body's last chunk, empty)
    let rest = read_until(&mut get, "0\r\n\r\n");
    assert!(
        rest.ends_with("0\r\n\r\n"),
        "the stream did not end: {rest}"
    );
}

/// Budgets over HTTP: every session of one gateway counts in one store
/// (`limit ... 3 per day`), and `per session` counts each
/// `Mcp-Session-Id` apart.
#[test]
fn sessions_share_the_gateways_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let policy = r#"
policy gw {
  limit all: "a/echo" 3 per day
  limit mine: "a/echo" 2 per day per session
  allow "a/echo"
}
"#;
    let g = start_with(dir.path(), policy, &["a"], &[]);
    let (s1, s2) = (open(&g, &[]), open(&g, &[]));
    let ok = |v: &Value| v["result"]["isError"] != true && v.get("error").is_none();
    let mut seen = Vec::new();
    for session in [&s1, &s1, &s1, &s2, &s2] {
        let answer = call(&g, session, &[], "a__echo", json!({"n": 1}));
        seen.push(ok(&answer));
        if !ok(&answer) {
            assert!(answer.to_string().contains("limit_exceeded"), "{answer}");
        }
    }
    // s1: two (its own budget), then refused; s2: one (the shared three
    // are spent), then refused.
    assert_eq!(seen, [true, true, false, true, false]);
}
