//! End to end over streamable HTTP with the official SDKs' clients: the
//! TypeScript SDK (`tests/e2e/ts_gateway.cjs`, MCP 2025-11-25) and the
//! Python SDK's high-level client speaking 2026-07-28 without a session
//! (`tests/e2e/sdk_stateless.py`), each against one `mcppol gateway
//! --listen` with the real server-everything, server-memory and
//! server-filesystem from npm behind it (the world of `gateway_e2e.rs`).
//! `.ci/e2e-deps` installs them into `.e2e/`; without it the tests skip
//! with a message, unless `CI` is set.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::gateway_e2e::{listen, package, python, root, text, world};

const DANA: &str = "dana-token-0123456789abcdef";

/// Runs an SDK host script with this config; its JSON report.
fn host(program: &Path, script: &str, cfg: &Value) -> Value {
    let out = Command::new(program)
        .arg(root().join("tests/e2e").join(script))
        .arg(cfg.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK host failed: {}\ngateway stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(cfg["stderr"].as_str().unwrap()).unwrap_or_default()
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sandbox(cfg: &Value) -> PathBuf {
    PathBuf::from(cfg["sandbox"].as_str().unwrap())
}

/// The hidden tool is left out, everything's echo is there, and the
/// three servers are all listed.
fn check_listing(tools: &Value) {
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!names.contains(&"everything__get-env"), "{names:?}");
    for listed in [
        "everything__echo",
        "memory__create_entities",
        "fs__write_file",
    ] {
        assert!(names.contains(&listed), "{listed} in {names:?}");
    }
}

#[test]
fn the_typescript_sdk_over_streamable_http() {
    if python().is_none() {
        return;
    }
    let node_modules = root().join(".e2e/node/node_modules");
    let sdk = node_modules.join("@modelcontextprotocol/sdk/package.json");
    if !sdk.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the TypeScript SDK is missing under CI: run .ci/e2e-deps"
        );
        eprintln!("skipped: the TypeScript SDK is not installed; run .ci/e2e-deps");
        return;
    }
    let (dir, mut cfg) = world();
    let gateway = listen(dir.path(), &cfg);
    cfg["node_modules"] = json!(node_modules);
    cfg["url"] = json!(gateway.url);
    cfg["token"] = json!(DANA);
    cfg["everything_js"] = json!(package("server-everything"));
    cfg["elicit"] = json!("allow_once");
    cfg["write_name"] = json!("ts.txt");
    let r = host(Path::new("node"), "ts_gateway.cjs", &cfg);
    assert_eq!(r["server_name"], "mcppol-gateway", "{r}");
    assert_eq!(r["protocol_version"], "2025-11-25", "{r}");
    check_listing(&r["tools"]);
    // An allowed call answers exactly as the server does directly.
    assert_eq!(r["echo"], r["direct_echo"], "{r}");
    assert_eq!(r["write_before"]["is_error"], false, "{r}");
    // Taint without the client's help.
    assert_eq!(r["write_after"]["is_error"], true, "{r}");
    assert!(
        text(&r["write_after"]).contains("rule confused_deputy"),
        "{r}"
    );
    // A hidden tool is an unknown one.
    assert_eq!(r["hidden"]["rpc_error"]["code"], -32602, "{r}");
    // The ask, put to the client by elicitation and allowed.
    assert_eq!(r["asked"].as_array().unwrap().len(), 1, "{r}");
    assert!(
        r["asked"][0].as_str().unwrap().contains("rule writes"),
        "{r}"
    );
    assert_eq!(r["write"]["is_error"], false, "{r}");
    let written = std::fs::read_to_string(sandbox(&cfg).join("ts.txt")).unwrap();
    assert_eq!(written, "asked");
}

#[test]
fn a_2026_client_without_a_session_and_an_ask_by_input_required() {
    let Some(python) = python() else {
        return;
    };
    let (dir, mut cfg) = world();
    let gateway = listen(dir.path(), &cfg);
    cfg["url"] = json!(gateway.url);
    cfg["token"] = json!(DANA);
    cfg["elicit"] = json!("allow_once");
    cfg["write_name"] = json!("stateless.txt");
    let r = host(&python, "sdk_stateless.py", &cfg);
    // The client probed server/discover and went stateless.
    assert_eq!(r["protocol_version"], "2026-07-28", "{r}");
    check_listing(&r["tools"]);
    assert_eq!(r["write_before"]["is_error"], false, "{r}");
    assert_eq!(r["echo"]["text"], "Echo: stateless", "{r}");
    // No session ties the requests together: the taint is the principal's.
    assert_eq!(r["write_after"]["is_error"], true, "{r}");
    let refusal = r["write_after"]["text"].as_str().unwrap();
    assert!(refusal.contains("rule confused_deputy"), "{r}");
    // The ask, put as `input_required` and settled by the retry.
    assert_eq!(r["asked"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["write"]["is_error"], false, "{r}");
    let written = std::fs::read_to_string(sandbox(&cfg).join("stateless.txt")).unwrap();
    assert_eq!(written, "asked");
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let asked: Value = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["name"] == "write_file")
        .unwrap();
    assert_eq!(
        (&asked["reason"], &asked["approval"], &asked["principal"]),
        (&json!("ask_rule"), &json!("once"), &json!("dana")),
        "{asked}"
    );
}
