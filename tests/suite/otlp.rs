//! Decision logs as OpenTelemetry, end to end: the real `mcppol proxy`
//! with `--otlp-endpoint` in front of a scripted server, and a real OTLP
//! receiver (tests/fixtures/otlp/receiver.py) that decodes what arrives
//! with the OpenTelemetry protobuf definitions (`opentelemetry-proto` in
//! .e2e/venv, installed by .ci/e2e-deps).
//!
//! - every governed request of a 1,000-call run arrives as exactly one MCP
//!   span with its attributes and one `apply_guardrail` child carrying the
//!   decision, and no byte of what arrives holds argument or result text;
//! - an exporter pointed at a dead port changes no decision;
//! - a bad `--otlp-endpoint` is a usage error.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::proxy::harness::Proxy;

/// Argument text that must never leave the process as telemetry.
const MARKER: &str = "otlp-marker-9d1c";
/// The host's ids of the calls start here.
const FIRST_ID: i64 = 10_000;

const POLICY: &str =
    "policy t {\n  default deny\n  allow echo_ok: \"s/echo\"\n  deny no_secret: \"s/secret\"\n}\n";

/// The venv's Python when it has the OpenTelemetry protobuf package, or
/// `None` (skip; under CI a missing install fails).
fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".e2e/venv/bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import opentelemetry.proto.collector.trace.v1"])
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!("opentelemetry-proto is missing from .e2e/venv under CI: run .ci/e2e-deps");
    }
    eprintln!("skipped: opentelemetry-proto is not installed in .e2e/venv; run .ci/e2e-deps");
    None
}

/// The receiver, writing into `dir`, and its port.
struct Receiver {
    child: Child,
    port: u16,
}

impl Receiver {
    fn start(python: &Path, dir: &Path) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp/receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(dir)
            .arg("120")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver printed no port: {line:?}"));
        Receiver { child, port }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON lines of `path` (none while it does not exist).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tool of call `i`, and the decision, source and rule the policy gives it.
fn expected(
    i: usize,
) -> (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
) {
    match i % 3 {
        0 => ("echo", "allow", "allow", Some("echo_ok")),
        1 => ("secret", "deny", "deny", Some("no_secret")),
        _ => ("read_file", "deny", "default", None),
    }
}

/// Runs `calls` calls through a proxy with these extra flags and returns
/// each call's answer, by call number.
fn run_calls(dir: &Path, flags: &[&str], calls: usize) -> Vec<Value> {
    let policy = dir.join("policy/t.mcppol");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(&policy, POLICY).unwrap();
    let mut args = vec!["--policy", policy.to_str().unwrap(), "--server-id", "s"];
    args.extend_from_slice(flags);
    let mut p = Proxy::start(dir, &args, &[("MCPPOL_LOG", "warn")]);
    p.initialize(json!({}));
    let mut answers = Vec::with_capacity(calls);
    for i in 0..calls {
        let id = FIRST_ID + i64::try_from(i).unwrap();
        let (tool, ..) = expected(i);
        p.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"path": format!("{MARKER}-{i}")}}}));
        answers.push(p.wait_for(|m| m.get("id") == Some(&json!(id))));
    }
    assert_eq!(p.close().code(), Some(0));
    answers
}

/// Whether an answer is the server's (allowed) or a refusal.
fn allowed(answer: &Value) -> bool {
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"]["isError"] != true
}

#[test]
fn every_governed_request_arrives_as_one_span_without_argument_text() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp");
    std::fs::create_dir(&out).unwrap();
    let receiver = Receiver::start(&python, &out);
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let audit = dir.path().join("audit.jsonl");
    let calls = 1_000;
    let answers = run_calls(
        dir.path(),
        &[
            "--otlp-endpoint",
            &endpoint,
            "--audit",
            audit.to_str().unwrap(),
        ],
        calls,
    );
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(
            allowed(answer),
            expected(i).1 == "allow",
            "call {i}: {answer}"
        );
    }
    assert_eq!(lines(&audit).len(), calls);

    // The proxy sent what was queued before it exited.
    let spans = lines(&out.join("spans.jsonl"));
    assert!(lines(&out.join("errors.jsonl")).is_empty());
    let (requests, guardrails): (Vec<&Value>, Vec<&Value>) = spans
        .iter()
        .partition(|s| s["name"].as_str().unwrap().starts_with("tools/call"));
    assert_eq!(requests.len(), calls, "MCP spans");
    assert_eq!(guardrails.len(), calls, "apply_guardrail spans");

    // One MCP span per request, by its JSON-RPC id.
    let mut by_id: BTreeMap<i64, &Value> = BTreeMap::new();
    for s in &requests {
        let a = &s["attributes"];
        let id: i64 = a["jsonrpc.request.id"].as_str().unwrap().parse().unwrap();
        assert!(by_id.insert(id, s).is_none(), "two spans for request {id}");
        let i = usize::try_from(id - FIRST_ID).unwrap();
        let (tool, ..) = expected(i);
        assert_eq!(s["name"], format!("tools/call {tool}"));
        assert_eq!(s["kind"], 2, "SPAN_KIND_SERVER: {s}");
        assert_eq!(a["mcp.method.name"], "tools/call");
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["network.transport"], "pipe");
        assert_eq!(a["mcp.protocol.version"], "2025-11-25");
        assert_eq!(a["mcppol.server"], "s");
        assert_eq!(s["resource"]["service.name"], "mcppol");
        assert!(s["parent_span_id"].as_str().unwrap().is_empty());
    }
    let ids: BTreeSet<i64> = by_id.keys().copied().collect();
    let sent: BTreeSet<i64> = (0..calls)
        .map(|i| FIRST_ID + i64::try_from(i).unwrap())
        .collect();
    assert_eq!(ids, sent);

    // Each request span has one apply_guardrail child with the decision.
    let by_span: BTreeMap<&str, i64> = by_id
        .iter()
        .map(|(id, s)| (s["span_id"].as_str().unwrap(), *id))
        .collect();
    let mut children = BTreeSet::new();
    for g in &guardrails {
        assert_eq!(g["name"], "apply_guardrail mcppol");
        let parent = g["parent_span_id"].as_str().unwrap();
        let id = *by_span
            .get(parent)
            .unwrap_or_else(|| panic!("an orphan guardrail span: {g}"));
        assert!(children.insert(id), "two guardrail spans for request {id}");
        assert_eq!(g["trace_id"], by_id[&id]["trace_id"]);
        let (_, decision, source, rule) = expected(usize::try_from(id - FIRST_ID).unwrap());
        let a = &g["attributes"];
        assert_eq!(a["gen_ai.operation.name"], "apply_guardrail");
        assert_eq!(a["gen_ai.security.target.type"], "tool_call");
        assert_eq!(a["gen_ai.security.decision.type"], decision, "{g}");
        assert_eq!(a["mcppol.source"], source, "{g}");
        assert_eq!(a["mcppol.rule_id"].as_str(), rule, "{g}");
        assert_eq!(a["mcppol.approval"], "none");
        assert!(a["gen_ai.security.decision.reason"].is_string());
        assert!(a["mcppol.args_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"));
        let digest = a["gen_ai.security.policy.id"].as_str().unwrap();
        assert!(digest.starts_with("sha256:"), "{g}");
        assert_eq!(a["gen_ai.security.policy.version"], digest);
        assert_eq!(a["gen_ai.security.policy.name"], "t");
    }

    // The metrics: every decision counted, every request timed.
    let points = lines(&out.join("metrics.jsonl"));
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for p in &points {
        let name = p["name"].as_str().unwrap();
        let n = p["value"].as_u64().or(p["count"].as_u64()).unwrap_or(0);
        // Cumulative: the last export of each series holds its total.
        last.insert(format!("{name} {}", p["attributes"]), n);
    }
    let total = |metric: &str| -> u64 {
        last.iter()
            .filter(|(k, _)| k.starts_with(&format!("{metric} ")))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(total("mcppol.decisions"), calls as u64, "{last:#?}");
    assert_eq!(total("mcp.server.operation.duration"), calls as u64);
    assert_eq!(total("mcppol.otlp.spans.dropped"), 0);

    // Never the arguments, never the results (both hold the marker).
    let raw = std::fs::read(out.join("raw.bin")).unwrap();
    assert!(!raw.is_empty());
    assert!(
        !raw.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()),
        "argument text reached the collector"
    );
}

#[test]
fn a_dead_collector_changes_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on a port the OS gave and took back.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let answers = run_calls(dir.path(), &["--otlp-endpoint", &endpoint], 90);
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(
            allowed(answer),
            expected(i).1 == "allow",
            "call {i}: {answer}"
        );
    }
    // The exit waits a bounded time for the queue, not an export timeout per span.
    assert!(started.elapsed() < Duration::from_secs(30));
    let stderr = std::fs::read_to_string(dir.path().join("proxy.stderr")).unwrap();
    assert!(stderr.contains("an OTLP export failed"), "{stderr}");
}

#[test]
fn a_bad_endpoint_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("t.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let out = crate::common::mcppol()
        .args(["proxy", "--policy"])
        .arg(&policy)
        .args([
            "--server-id",
            "s",
            "--otlp-endpoint",
            "collector:4318",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--otlp-endpoint `collector:4318` is not an http(s) URL"),
        "{stderr}"
    );
}

#[cfg(feature = "http")]
#[test]
fn a_gateway_session_s_spans_name_its_transport_and_session_but_not_its_id() {
    use super::gateway_http::{call, open, start};
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp");
    std::fs::create_dir(&out).unwrap();
    let receiver = Receiver::start(&python, &out);
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let g = start(
        dir.path(),
        &["--tokens", "TOKENS", "--otlp-endpoint", &endpoint],
    );
    let dana = [("authorization", "Bearer dana-token-0123456789abcdef")];
    let session = open(&g, &dana);
    let answer = call(&g, &session, &dana, "a__echo", json!({"path": MARKER}));
    assert!(allowed(&answer), "{answer}");
    // The gateway runs on: its batch leaves within a second or so.
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = lines(&out.join("spans.jsonl"));
        if spans.len() >= 2 || Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let request = spans.iter().find(|s| s["kind"] == 2).unwrap();
    let a = &request["attributes"];
    assert_eq!(request["name"], "tools/call echo");
    assert_eq!(a["gen_ai.tool.name"], "echo");
    assert_eq!(a["mcppol.server"], "a");
    assert_eq!(a["network.transport"], "tcp");
    assert_eq!(a["mcp.protocol.version"], "2025-11-25");
    assert_eq!(a["jsonrpc.request.id"], "2");
    let digest = a["mcp.session.id"].as_str().unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 7 + 16,
        "{digest}"
    );
    let guardrail = spans.iter().find(|s| s["kind"] == 1).unwrap();
    assert_eq!(
        guardrail["attributes"]["gen_ai.security.decision.type"],
        "allow"
    );
    // Neither the arguments nor the session's id (which addresses it).
    let raw = std::fs::read(out.join("raw.bin")).unwrap();
    for secret in [MARKER, session.as_str()] {
        assert!(
            !raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "`{secret}` reached the collector"
        );
    }
}

/// `mcppol serve` with an exporter, and the address it listens on.
fn serve_exporting(dir: &Path, endpoint: &str) -> (Child, String) {
    let policy = dir.join("t.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(&policy)
        .args(["--otlp-endpoint", endpoint])
        .env("NO_COLOR", "1")
        .env("MCPPOL_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(a) = line
            .trim()
            .strip_prefix("mcppol serve: listening on http://")
        {
            let addr = a.to_string();
            // Drained, so the process never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, addr);
        }
        line.clear();
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("mcppol serve printed no address");
}

/// `POST /v1/decide` with `body`: the answer's JSON.
fn serve_decide(addr: &str, body: &Value) -> Value {
    use std::io::{Read, Write};
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/decide HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (_, json) = raw.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(json).unwrap()
}

#[test]
fn each_serve_decision_arrives_as_one_span_pair_without_argument_text() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp");
    std::fs::create_dir(&out).unwrap();
    let receiver = Receiver::start(&python, &out);
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let (mut serve, addr) = serve_exporting(dir.path(), &endpoint);
    let calls = 30;
    for i in 0..calls {
        let (tool, decision, ..) = expected(i);
        let answer = serve_decide(
            &addr,
            &json!({"tool": format!("s/{tool}"), "args": {"path": format!("{MARKER}-{i}")}}),
        );
        assert_eq!(answer["decision"], decision, "{answer}");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = lines(&out.join("spans.jsonl"));
        if spans.len() >= 2 * calls || Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(spans.len(), 2 * calls, "{spans:#?}");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for guardrail in spans.iter().filter(|s| s["kind"] == 1) {
        let a = &guardrail["attributes"];
        assert_eq!(a["gen_ai.security.policy.name"], "t");
        assert!(a["mcppol.args_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"));
        let key = format!(
            "{} {}",
            a["gen_ai.security.decision.type"].as_str().unwrap(),
            a["mcppol.source"].as_str().unwrap()
        );
        *seen.entry(key).or_default() += 1;
    }
    let want: BTreeMap<String, usize> = [
        ("allow allow".to_string(), 10),
        ("deny default".to_string(), 10),
        ("deny deny".to_string(), 10),
    ]
    .into_iter()
    .collect();
    assert_eq!(seen, want);
    for request in spans.iter().filter(|s| s["kind"] == 2) {
        let a = &request["attributes"];
        assert_eq!(a["mcp.method.name"], "tools/call");
        assert_eq!(a["network.transport"], "tcp");
        assert_eq!(a["mcppol.server"], "s");
    }
    let raw = std::fs::read(out.join("raw.bin")).unwrap();
    assert!(
        !raw.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()),
        "argument text reached the collector"
    );
}
