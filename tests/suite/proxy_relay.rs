//! `mcppol proxy` as a relay: what it forwards is what it decided (the
//! normalized URI), what the protocol adds passes on governed requests
//! (a task's `task`), the model is never listed a definition nobody
//! approved, a misnamed `--server-id` is told at start, and a host's
//! cancel of a call waiting on approval closes the approval dialog.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::proxy::harness::{server_log, text, Proxy};

const POLICY: &str = r#"
policy scripted {
  default deny
  scope tools, resources
  allow resource "scripted/file:///*"
  ask confirm: "scripted/echo" when args.ask == true
  allow "scripted/echo", "scripted/read_file", "scripted/change"
}
"#;

fn setup(policy: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scripted.mcppol");
    std::fs::write(&path, policy).unwrap();
    let p = path.to_str().unwrap().to_string();
    (dir, p)
}

fn start(dir: &Path, policy: &str, extra: &[&str]) -> Proxy {
    let mut args = vec!["--policy", policy, "--server-id", "scripted"];
    args.extend_from_slice(extra);
    Proxy::start(dir, &args, &[])
}

/// The params of the requests of `method` the server received.
fn received(dir: &Path, method: &str) -> Vec<Value> {
    server_log(dir)
        .into_iter()
        .filter(|m| m["method"] == method)
        .map(|m| m["params"].clone())
        .collect()
}

fn tool<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn a_resource_read_reaches_the_server_as_the_uri_that_was_decided() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    let out = p.request("resources/read", json!({"uri": "file:///srv/x/../y"}));
    assert_eq!(
        out["result"]["contents"][0]["uri"], "file:///srv/y",
        "{out}"
    );
    let out = p.request("resources/read", json!({"uri": "file:///srv/../y"}));
    assert_eq!(out["result"]["contents"][0]["uri"], "file:///y", "{out}");
    let out = p.request("resources/read", json!({"uri": "FILE:///srv/%7Ea/./b"}));
    assert_eq!(
        out["result"]["contents"][0]["uri"], "file:///srv/~a/b",
        "{out}"
    );
    let uris: Vec<Value> = received(dir.path(), "resources/read")
        .iter()
        .map(|p| p["uri"].clone())
        .collect();
    assert_eq!(
        uris,
        [
            json!("file:///srv/y"),
            json!("file:///y"),
            json!("file:///srv/~a/b")
        ]
    );
}

#[test]
fn what_the_protocol_adds_to_params_passes_on_governed_requests() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"tasks": {}}));
    // A task-augmented call (MCP 2025-11-25): the server gets `task`, and
    // the host the task it made.
    let out = p.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"a": 1}, "task": {"ttl": 60000},
               "_meta": {"progressToken": "t"}, "x-later": [1, 2]}),
    );
    assert_eq!(out["result"]["task"]["taskId"], "task-1", "{out}");
    assert_eq!(out["result"]["task"]["ttl"], 60000, "{out}");
    let calls = received(dir.path(), "tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "echo");
    assert_eq!(calls[0]["arguments"], json!({"a": 1}));
    assert_eq!(calls[0]["task"], json!({"ttl": 60000}));
    assert_eq!(calls[0]["_meta"], json!({"progressToken": "t"}));
    assert_eq!(calls[0]["x-later"], json!([1, 2]));
    // A read keeps its other params too (the URI is the proxy's).
    p.request(
        "resources/read",
        json!({"uri": "file:///a/../b", "_meta": {"k": 1}, "x-later": true}),
    );
    let reads = received(dir.path(), "resources/read");
    assert_eq!(
        reads[0],
        json!({"uri": "file:///b", "_meta": {"k": 1}, "x-later": true})
    );
    // A plain call is answered as before.
    assert_eq!(text(&p.call("echo", json!({"b": 2}))), r#"{"b": 2}"#);
}

#[test]
fn a_changed_description_is_listed_as_approved_and_its_calls_are_refused() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    let first = p.request("tools/list", json!({}));
    assert_eq!(tool(&first, "echo").unwrap()["description"], "echoes");
    p.call("change", json!({}));
    p.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    // The server now describes `echo` otherwise; the model reads the
    // approved definition, whatever the server says now.
    for _ in 0..3 {
        let list = p.request("tools/list", json!({}));
        assert_eq!(tool(&list, "echo").unwrap(), tool(&first, "echo").unwrap());
        assert_eq!(tool(&list, "read_file"), tool(&first, "read_file"));
    }
    let out = p.call("echo", json!({}));
    assert!(text(&out).contains("reason definition_changed"), "{out}");
    assert!(received(dir.path(), "tools/call")
        .iter()
        .all(|c| c["name"] != "echo"));
}

#[test]
fn a_tool_the_lock_file_approved_otherwise_is_left_out_of_the_listing() {
    let (dir, policy) = setup(POLICY);
    let lock = dir.path().join("scripted.lock");
    let fp = format!("sha256:{}", "0".repeat(64));
    std::fs::write(
        &lock,
        json!({"version": 1, "tools": {"scripted/echo": fp}}).to_string(),
    )
    .unwrap();
    let mut p = start(dir.path(), &policy, &["--lock", lock.to_str().unwrap()]);
    p.initialize(json!({}));
    let list = p.request("tools/list", json!({}));
    // Only a fingerprint is held for `echo`: no approved definition to
    // show, so none is shown. The tools the lock does not name are new,
    // as before.
    assert!(tool(&list, "echo").is_none(), "{list}");
    assert!(tool(&list, "read_file").is_some(), "{list}");
    let out = p.call("echo", json!({}));
    assert!(text(&out).contains("reason definition_changed"), "{out}");
}

fn stderr_of(policy: &str, server_id: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, policy).unwrap();
    let out = std::process::Command::new(crate::common::MCPPOL)
        .args(["proxy", "--policy"])
        .arg(&path)
        .args(["--server-id", server_id, "--", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_server_id_the_policy_never_names_is_warned_about_at_start() {
    let policy = "policy p {\n  default deny\n  tools { exclude \"fs/write_*\" }\n  allow \"fs/read_*\"\n}\n";
    let err = stderr_of(policy, "filesystem");
    let line = err
        .lines()
        .find(|l| l.starts_with("warning:"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        line.contains("`filesystem`") && line.contains("it names: `fs`"),
        "{line}"
    );
    // A near miss gets a suggestion.
    let err = stderr_of(policy, "fss");
    assert!(err.contains("did you mean `--server-id fs`?"), "{err}");
    // Named (also loosely, or by a glob, a bare tool name or `*`): no warning.
    for (policy, id) in [
        (policy, "fs"),
        (policy, "FS"),
        ("policy p {\n  allow \"gh-*/get\"\n}\n", "gh-2"),
        (
            "policy p {\n  deny \"fs/rm\"\n  allow \"read_file\"\n}\n",
            "other",
        ),
        ("policy p {\n  deny *\n}\n", "other"),
        ("policy p {\n  trusted \"fs\"\n  allow \"gh/x\"\n}\n", "fs"),
    ] {
        let err = stderr_of(policy, id);
        assert!(!err.contains("warning:"), "{id}: {err}");
    }
}

#[test]
fn a_host_cancelling_a_call_that_waits_on_approval_closes_the_dialog() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"elicitation": {}}));
    p.send(json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"ask": true}}}));
    let ask = p.wait_for(|m| m["method"] == "elicitation/create");
    p.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 50, "reason": "the user pressed Esc"}}),
    );
    let cancel = p.wait_for(|m| m["method"] == "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], ask["id"], "{cancel}");
    assert!(cancel.get("id").is_none());
    // The cancelled call gets no answer, and never reached the server.
    assert!(p.quiet_for(Duration::from_millis(500)), "{:?}", p.backlog);
    assert!(received(dir.path(), "tools/call").is_empty());
    // An answer to the cancelled dialog that comes anyway changes nothing.
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"],
                  "result": {"action": "accept", "content": {"decision": "allow_once"}}}));
    assert_eq!(text(&p.call("echo", json!({"n": 1}))), r#"{"n": 1}"#);
    assert_eq!(received(dir.path(), "tools/call").len(), 1);
}

/// Issue 22, item 6, in the proxy: whatever the policy allows, no call
/// reaches the server that names the policy file it enforces (or its
/// tests, or the audit file), as a path or a `file:` URI, in any argument.
#[test]
fn a_call_naming_the_policy_it_enforces_is_refused_whatever_the_policy_says() {
    let (dir, policy) = setup(POLICY);
    let audit = dir.path().join("audit.jsonl");
    let tests = dir.path().join("scripted.mcppoltest");
    std::fs::write(&tests, "policy scripted.mcppol\n").unwrap();
    let mut p = start(dir.path(), &policy, &["--audit", audit.to_str().unwrap()]);
    p.initialize(json!({}));
    let uri = format!("file://{policy}");
    for args in [
        json!({"text": policy}),
        json!({"nested": [{"path": uri}]}),
        json!({"text": tests.to_str().unwrap()}),
        json!({"text": audit.to_str().unwrap()}),
    ] {
        let out = p.call("echo", args.clone());
        assert_eq!(out["result"]["isError"], true, "{args}: {out}");
        assert!(text(&out).contains("protected_policy"), "{args}: {out}");
    }
    // Another file is the policy's to decide.
    let other = dir.path().join("notes.txt");
    let out = p.call("echo", json!({"text": other.to_str().unwrap()}));
    assert_ne!(out["result"]["isError"], true, "{out}");
    p.close();
    let calls = received(dir.path(), "tools/call");
    assert_eq!(
        calls.len(),
        1,
        "only the allowed call reached the server: {calls:?}"
    );
    let lines = std::fs::read_to_string(&audit).unwrap();
    let protected = lines
        .lines()
        .filter(|l| l.contains("\"reason\":\"protected_policy\""))
        .count();
    assert_eq!(protected, 4, "{lines}");
}
