//! End to end: `mcppol gateway --stdio` reaches its servers in the newest
//! protocol each speaks. A server of the official MCP Python SDK
//! (tests/e2e/py_server_2026.py), as a child and over streamable HTTP,
//! answers `server/discover` and is spoken to in MCP 2026-07-28 (no
//! session, the `_meta` envelope, its `input_required` answered through
//! the host); the real server-everything from npm does not, and is reached
//! with `initialize` (2025-11-25). Driven by the Python SDK's `Client` as a
//! 2025-11-25 host and as a 2026-07-28 one (tests/e2e/sdk_servers_2026.py).
//! Skipped without `.e2e/` (unless `CI` is set), as gateway_e2e.rs is.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::gateway_e2e::{package, python, root, text};

const POLICY: &str = r#"
policy gw {
  default deny
  deny after_2026: "everything/echo" when tainted
  allow "py_stdio/*", "py_http/*", "everything/echo"
}
"#;

/// The 2026 server over streamable HTTP on a free loopback port; killed
/// on drop.
struct PyHttp {
    child: Child,
    url: String,
}

impl Drop for PyHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PyHttp {
    fn start(python: &std::path::Path) -> PyHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(python)
            .arg(root().join("tests/e2e/py_server_2026.py"))
            .args(["http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = PyHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the Python SDK server did not listen on port {port} within 30 s");
    }
}

/// Runs the host in `mode` against a gateway over the three servers; the
/// report, and the gateway's log.
fn run(mode: &str, taint_by: &str, other: &str) -> Option<(Value, String)> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let http = PyHttp::start(&python);
    let policy = dir.path().join("gw.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let servers = json!({"mcpServers": {
        "py_stdio": {"command": python, "args": [root().join("tests/e2e/py_server_2026.py"), "stdio"]},
        "py_http": {"type": "http", "url": http.url},
        "everything": {"command": "node", "args": [package("server-everything"), "stdio"]},
    }});
    let servers_file = dir.path().join("servers.json");
    std::fs::write(&servers_file, servers.to_string()).unwrap();
    let stderr = dir.path().join("gateway.stderr");
    let cfg = json!({
        "mcppol": crate::common::MCPPOL,
        "policy": policy,
        "servers": servers_file,
        "stderr": stderr,
        "mode": mode,
        "taint_by": taint_by,
        "other": other,
        "server_py": root().join("tests/e2e/py_server_2026.py"),
    });
    let out = Command::new(&python)
        .arg(root().join("tests/e2e/sdk_servers_2026.py"))
        .arg(cfg.to_string())
        .output()
        .unwrap();
    let log = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        out.status.success(),
        "the SDK host failed: {}\ngateway stderr:\n{log}",
        String::from_utf8_lossy(&out.stderr),
    );
    Some((serde_json::from_slice(&out.stdout).unwrap(), log))
}

/// The protocol the gateway's log says a server came up with.
fn protocol_of(log: &str, server: &str) -> String {
    log.lines()
        .find(|l| l.contains("the server is up") && l.contains(&format!("server={server} ")))
        .and_then(|l| l.split("protocol=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no start line of `{server}` in:\n{log}"))
        .to_string()
}

fn check(r: &Value, log: &str, taint_by: &str) {
    // Each server in the newest version it speaks.
    assert_eq!(protocol_of(log, "py_stdio"), "2026-07-28", "{log}");
    assert_eq!(protocol_of(log, "py_http"), "2026-07-28", "{log}");
    assert_eq!(protocol_of(log, "everything"), "2025-11-25", "{log}");

    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for expected in [
        "py_stdio__echo",
        "py_stdio__confirm",
        "py_http__echo",
        "py_http__confirm",
        "everything__echo",
    ] {
        assert!(tools.contains(&expected), "{expected} missing: {tools:?}");
    }

    // A call through the gateway answers as the server does straight, and
    // the server was spoken to in 2026-07-28 either way.
    assert_eq!(r["echo"], r["direct_echo"], "{r}");
    assert_eq!(r["echo_other"], r["direct_echo"], "{r}");
    assert!(
        text(&r["echo"]).contains("echo: same (protocol 2026-07-28)"),
        "{r}"
    );

    // Taint by the 2026 server, with nothing passed by the host.
    assert_eq!(r["everything_before"]["is_error"], false, "{r}");
    assert_eq!(r["everything_after"]["is_error"], true, "{r}");
    assert!(
        text(&r["everything_after"]).contains("rule after_2026"),
        "{r}"
    );
    assert!(
        taint_by.starts_with("py_"),
        "the taint comes from a 2026 server"
    );

    // The server's own question reached the person, once a call, and its
    // answer went back to the server.
    assert_eq!(text(&r["confirm"]), "removed a", "{r}");
    assert_eq!(text(&r["confirm_other"]), "removed b", "{r}");
    let asked: Vec<&str> = r["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(asked, ["Really remove a?", "Really remove b?"], "{r}");
}

#[test]
fn a_2025_host_reaches_2026_servers_and_a_2025_one_through_the_gateway() {
    let Some((r, log)) = run("legacy", "py_stdio", "py_http") else {
        return;
    };
    assert_eq!(r["protocol_version"], "2025-11-25", "{r}");
    check(&r, &log, "py_stdio");
}

#[test]
fn a_2026_host_reaches_2026_servers_and_a_2025_one_through_the_gateway() {
    let Some((r, log)) = run("auto", "py_http", "py_stdio") else {
        return;
    };
    assert_eq!(r["protocol_version"], "2026-07-28", "{r}");
    check(&r, &log, "py_http");
}
