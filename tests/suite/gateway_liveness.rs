//! A remote (streamable HTTP) server that stops answering, through the
//! real binary: the remote is itself an `mcppol gateway --listen` on
//! loopback (in front of the scripted echo server), frozen with SIGSTOP so
//! that its socket still accepts and nothing answers. The gateway under
//! test, over stdio, pings it every `--ping-interval`: once a ping goes
//! unanswered for `--ping-timeout`, the remote is marked down exactly as a
//! dead stdio child is (the host told `list_changed`, its tools out of the
//! listing, its calls `-32603` naming it, the other server untouched), and
//! after SIGCONT it is connected again and its tools come back.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::proxy::harness::Proxy;

/// A process killed on drop (a failed assertion included), continued
/// first in case it was left stopped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        signal(&self.0, "CONT");
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(child: &Child, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status();
}

fn echo_server() -> Value {
    let fault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault/server.py");
    json!({"command": "python3", "args": [fault, "echo"]})
}

/// The remote: a gateway on a free port of 127.0.0.1 in front of one echo
/// server (`e`); its URL.
fn remote(dir: &Path) -> (Killed, String) {
    let policy = dir.join("remote.mcppol");
    std::fs::write(&policy, "policy remote {\n  allow \"e/read_file\"\n}\n").unwrap();
    let servers = dir.join("remote-servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"e": echo_server()}}).to_string(),
    )
    .unwrap();
    let stderr = dir.join("remote.stderr");
    let child = Command::new(crate::common::MCPPOL)
        .args(["gateway", "--policy"])
        .arg(&policy)
        .arg("--servers")
        .arg(&servers)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let killed = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(addr) = log
            .split("addr=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            return (killed, format!("http://{addr}/mcp"));
        }
        assert!(
            Instant::now() < deadline,
            "the remote did not listen:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tool_names(p: &mut Proxy) -> Vec<String> {
    let list = p.request("tools/list", json!({}));
    let mut names: Vec<String> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no listing: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn list_changed(m: &Value) -> bool {
    m["method"] == "notifications/tools/list_changed"
}

#[test]
fn a_remote_server_that_stops_answering_ping_is_marked_down_and_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (remote, url) = remote(dir.path());
    let policy = dir.path().join("gw.mcppol");
    std::fs::write(
        &policy,
        "policy gw {\n  default deny\n  allow \"r/e__read_file\"\n  allow \"a/read_file\"\n}\n",
    )
    .unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"r": {"type": "http", "url": url}, "a": echo_server()}}).to_string(),
    )
    .unwrap();
    let stderr = dir.path().join("gateway.stderr");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.args(["gateway", "--stdio", "--policy"])
        .arg(&policy)
        .arg("--servers")
        .arg(&servers)
        .args(["--ping-interval", "300ms", "--ping-timeout", "500ms"])
        .args(["--start-timeout", "2s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut p = Proxy::spawn(cmd, stderr);
    p.initialize(json!({}));
    assert_eq!(tool_names(&mut p), ["a__read_file", "r__e__read_file"]);
    let up = p.call("r__e__read_file", json!({"n": 1}));
    assert_eq!(up["result"]["content"][0]["text"], "call 1", "{up}");

    // Frozen: its socket accepts, nothing answers.
    signal(&remote.0, "STOP");
    let frozen = Instant::now();
    p.wait_for(list_changed);
    let noticed = frozen.elapsed();
    assert!(
        noticed < Duration::from_secs(10),
        "noticed after {noticed:?}"
    );
    assert_eq!(tool_names(&mut p), ["a__read_file"]);
    let down = p.call("r__e__read_file", json!({"n": 2}));
    assert_eq!(down["error"]["code"], -32603, "{down}");
    let message = down["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("`r`") && message.contains("ping"),
        "{message}"
    );
    // The other server is untouched.
    let other = p.call("a__read_file", json!({"n": 3}));
    assert_eq!(other["result"]["content"][0]["text"], "call 3", "{other}");

    // Answering again: connected again (after a backoff), its tools back.
    signal(&remote.0, "CONT");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        p.wait_for(list_changed);
        if tool_names(&mut p).len() == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the remote did not come back");
    }
    let back = p.call("r__e__read_file", json!({"n": 4}));
    assert_eq!(back["result"]["content"][0]["text"], "call 4", "{back}");
    let log = p.stderr_text();
    assert!(log.contains("did not answer `ping` within 500ms"), "{log}");
    assert_eq!(p.close().code(), Some(0));
}
