//! Every bound that `src/limits.rs` and the transport add, exceeded: each
//! ends in a clear error, never a crash, a hang or wider access
//! (docs/security.md, "Limits", lists these with the older bounds and
//! their tests: the policy file's size and nesting in tests/suite/robustness.rs,
//! the regex budget in tests/runaway.rs, the line length in
//! src/mcp/connection.rs).

#![cfg(feature = "pipeline")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcppol::mcp::text_result;
use mcppol::mcp::{
    BoxFuture, ConnectOptions, Connection, FakeServer, McpError, MemoryTransport, RequestHandler,
    RpcError, Transport, MAX_SERVER_REQUESTS,
};
use mcppol::pipeline::*;
use mcppol::PolicySet;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

// ------------------------------------------------------------ rule count

#[test]
fn a_file_past_the_rule_count_is_refused_with_a_clear_error() {
    let rules = "deny \"a\"\n".repeat(mcppol::MAX_RULES + 1);
    let text = format!("policy p {{\n{rules}}}\n");
    let err = PolicySet::from_text("many.mcppol", &text).unwrap_err();
    assert_eq!(err.diagnostics.len(), 1);
    let d = &err.diagnostics[0];
    assert_eq!(d.code, "mcppol::compile::too_many_rules");
    assert!(
        d.message.contains("more than 100000 rules"),
        "{}",
        d.message
    );
    // It points at the first rule too many.
    assert_eq!(d.line_col().0, mcppol::MAX_RULES + 2);
}

#[test]
fn a_file_at_the_rule_count_loads() {
    // Over several policies: the bound is the file's.
    let half = "deny \"a\"\n".repeat(mcppol::MAX_RULES / 2);
    let text = format!("policy p {{\n{half}}}\npolicy q {{\n{half}}}\n");
    let set = PolicySet::from_text("many.mcppol", &text).unwrap();
    assert_eq!(set.iter().count(), 2);
}

// --------------------------------------------------- arguments, definitions

fn fake() -> FakeServer {
    FakeServer::new().tool(json!({"name": "echo"}), |_| Ok(text_result("ok")))
}

fn pipeline(fake: &FakeServer) -> PipelineBuilder {
    let set = PolicySet::from_text("t.mcppol", "policy p { allow \"fs/*\" }").unwrap();
    let policy = set.iter().next().unwrap().clone();
    Pipeline::builder(
        "fs",
        Arc::new(MemoryTransport::new(fake.clone())),
        PolicySource::Fixed(policy),
    )
}

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!([v]);
    }
    json!({ "v": v })
}

fn assert_too_large(err: &CallError, what: &str) {
    assert_eq!(err.kind, ErrorKind::Protocol, "{err:?}");
    assert_eq!(err.reason, ErrorReason::InvalidArguments, "{err:?}");
    let detail = err.detail.as_deref().unwrap_or("");
    assert!(detail.contains(what), "{detail}");
}

#[tokio::test]
async fn arguments_over_the_size_bound_are_never_sent() {
    let fake = fake();
    let p = pipeline(&fake).build().unwrap();
    let opts = CallOptions::default();
    let at = json!({"s": "x".repeat(MAX_ARGUMENT_BYTES - 10)});
    assert!(p.call_tool("echo", at, &opts).await.is_ok());
    let over = json!({"s": "x".repeat(MAX_ARGUMENT_BYTES)});
    let err = p.call_tool("echo", over, &opts).await.unwrap_err();
    assert_too_large(&err, "more than 4194304 bytes");
    assert_eq!(
        fake.calls().len(),
        1,
        "only the call within the bound was sent"
    );
}

#[tokio::test]
async fn arguments_over_the_depth_bound_are_never_sent() {
    let fake = fake();
    let p = pipeline(&fake).build().unwrap();
    let opts = CallOptions::default();
    // The object itself is one level.
    assert!(p
        .call_tool("echo", nested(MAX_ARGUMENT_DEPTH - 1), &opts)
        .await
        .is_ok());
    let err = p
        .call_tool("echo", nested(MAX_ARGUMENT_DEPTH), &opts)
        .await
        .unwrap_err();
    assert_too_large(&err, "deeper than 64 levels");
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn a_hooks_rewrite_is_held_to_the_same_bounds() {
    let fake = fake();
    let deepen = Hook::before("deepen", Matcher::All, |mut call: ToolCall, _| async move {
        call.arguments = nested(200);
        Ok(Before::Rewrite(call))
    });
    let p = pipeline(&fake).hook(deepen).build().unwrap();
    let err = p
        .call_tool("echo", json!({}), &CallOptions::default())
        .await
        .unwrap_err();
    assert_too_large(&err, "deeper than 64 levels");
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn a_tool_definition_over_the_bound_is_left_out() {
    let big = json!({"name": "big", "description": "d".repeat(MAX_TOOL_DEFINITION_BYTES)});
    let fake = fake().tool(big, |_| Ok(text_result("big")));
    let p = pipeline(&fake).build().unwrap();
    let opts = CallOptions::default();
    let names: Vec<String> = p
        .list_tools(&opts)
        .await
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["echo"]);
    let err = p.call_tool("big", json!({}), &opts).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(fake.calls().is_empty());
}

// ------------------------------------------------------------ the transport

#[tokio::test]
async fn pending_requests_past_the_bound_fail_at_once() {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(client);
    let options = ConnectOptions {
        max_pending: 2,
        request_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    };
    let conn = Arc::new(Connection::start(BufReader::new(r), w, &options));
    // The server reads but never answers.
    let (sr, sw) = tokio::io::split(server);
    let reading = tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        let mut n = 0;
        while let Ok(Some(_)) = lines.next_line().await {
            n += 1;
        }
        n
    });
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let c = conn.clone();
            tokio::spawn(async move { c.request("tools/list", None).await })
        })
        .collect();
    // Let both get into the pending map.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    let third = tokio::time::timeout(Duration::from_secs(5), conn.request("ping", None))
        .await
        .expect("the request over the bound waited");
    match third {
        Err(McpError::Transport(m)) => assert!(m.contains("2 requests are already waiting"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The server goes away: the two waiting fail, and the slot is free.
    drop(sw);
    reading.abort();
    for w in waiting {
        let got = tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .unwrap();
        assert!(matches!(got.unwrap(), Err(McpError::Transport(_))));
    }
    drop(conn);
}

/// Answers nothing, ever: every request of the server's stays in flight.
struct Stuck(Arc<AtomicUsize>);

impl RequestHandler for Stuck {
    fn handle(&self, _: String, _: Option<Value>) -> BoxFuture<'static, Result<Value, RpcError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_server_flooding_requests_gets_errors_not_tasks() {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(client);
    let started = Arc::new(AtomicUsize::new(0));
    let options = ConnectOptions {
        handler: Arc::new(Stuck(started.clone())),
        ..ConnectOptions::default()
    };
    let _conn = Connection::start(BufReader::new(r), w, &options);
    let (sr, mut sw) = tokio::io::split(server);
    let flood = 3 * MAX_SERVER_REQUESTS;
    for i in 0..flood {
        let line = json!({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage"});
        sw.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(sr).lines();
    let mut refused = 0;
    while refused < flood - MAX_SERVER_REQUESTS {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the refusals did not come")
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["error"]["code"], -32603, "{v}");
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requests are in flight"));
        refused += 1;
    }
    assert_eq!(started.load(Ordering::SeqCst), MAX_SERVER_REQUESTS);
}

// ---------------------------------------------------------------- listings

fn many_tools(n: usize, page: usize) -> FakeServer {
    let mut fake = FakeServer::new().page_size(page);
    for i in 0..n {
        fake = fake.tool(json!({"name": format!("t{i}")}), |_| Ok(text_result("ok")));
    }
    fake
}

#[tokio::test]
async fn a_listing_past_the_page_bound_fails_and_lists_nothing() {
    let fake = many_tools(mcppol::mcp::MAX_PAGES + 1, 1);
    let t = MemoryTransport::new(fake.clone());
    match t.list_all_tools().await {
        Err(McpError::Protocol(m)) => assert!(m.contains("more than 100 pages"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Through the pipeline: the listing fails, never an empty list.
    let p = pipeline(&fake).build().unwrap();
    let err = p.list_tools(&CallOptions::default()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol, "{err:?}");
    let err = p
        .call_tool("t0", json!({}), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol, "{err:?}");
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn a_listing_past_the_item_bound_fails() {
    let n = mcppol::mcp::MAX_LIST_ITEMS + 1;
    let t = MemoryTransport::new(many_tools(n, 1000));
    match t.list_all_tools().await {
        Err(McpError::Protocol(m)) => assert!(m.contains("more than 10000 items"), "{m}"),
        other => panic!("{other:?}"),
    }
}

// ------------------------------------------------- the Claude Code hook

#[cfg(feature = "cli")]
mod claude_hook {
    use super::*;
    use std::path::Path;

    const SESSION: &str = "5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11";

    fn event(name: &str, changes: Value) -> Vec<u8> {
        let path = format!("tests/fixtures/claude/{name}.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for (k, new) in changes.as_object().unwrap() {
            v[k] = new.clone();
        }
        v.to_string().into_bytes()
    }

    fn run(state: &Path, input: Vec<u8>) -> (i32, Value) {
        let out = crate::common::mcppol()
            .args([
                "claude-hook",
                "--policy",
                "tests/fixtures/claude/policy.mcppol",
            ])
            .args(["--name", "claude", "--state-dir"])
            .arg(state)
            .write_stdin(input)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        (
            out.status.code().unwrap(),
            serde_json::from_str(&stdout).unwrap(),
        )
    }

    fn ls() -> Vec<u8> {
        event("pre_bash", json!({"tool_input": {"command": "ls"}}))
    }

    #[test]
    fn a_taint_file_over_its_bound_is_an_unknown_taint_that_denies() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("s-{SESSION}.taint"));
        let mut text = String::from("mcppol taint 1\n");
        while text.len() <= 64 * 1024 {
            text.push_str("\"some-server\"\n");
        }
        std::fs::write(&file, &text).unwrap();
        let (status, out) = run(dir.path(), ls());
        assert_eq!(status, 0);
        let answer = &out["hookSpecificOutput"];
        assert_eq!(answer["permissionDecision"], "deny", "{out}");
        let reason = answer["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("is larger than 64 KiB"), "{reason}");
        assert!(reason.contains("predicate_failed"), "{reason}");
    }

    #[test]
    fn taint_that_would_pass_the_bound_empties_the_file_and_then_denies() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("s-{SESSION}.taint"));
        let mut text = String::from("mcppol taint 1\n");
        let mut n = 0;
        while text.len() < 64 * 1024 - 20 {
            text.push_str(&format!("\"s{n}\"\n"));
            n += 1;
        }
        std::fs::write(&file, &text).unwrap();
        // The call within the bound reads the taint and decides by it.
        let (_, out) = run(dir.path(), ls());
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        // A server whose id does not fit: the append is refused.
        let post = event(
            "post_mcp",
            json!({"tool_name": format!("mcp__{}__search", "w".repeat(40))}),
        );
        let (status, out) = run(dir.path(), post);
        assert_eq!(status, 0);
        assert_eq!(out["decision"], "block", "{out}");
        let reason = out["reason"].as_str().unwrap();
        assert!(reason.contains("would pass 64 KiB"), "{reason}");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 0, "not emptied");
        let (_, out) = run(dir.path(), ls());
        let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(
            reason.contains("the session's taint is unknown"),
            "{reason}"
        );
    }
}
