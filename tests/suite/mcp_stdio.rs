//! The stdio transport against real child processes (small shell servers).

#![cfg(all(unix, feature = "pipeline"))]
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mcppol::mcp::{ConnectOptions, McpError, StdioTransport, Transport};
use serde_json::json;
use tokio::process::Command;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh"},"instructions":"hi"}}"#;

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    c
}

fn options() -> ConnectOptions {
    ConnectOptions {
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn handshake_list_and_a_dying_child() {
    // initialize, initialized, tools/list, then exits on the call.
    let script = format!(
        "read l; echo '{INIT}'; read l; read l; \
         echo '{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[{{\"name\":\"t\"}}]}}}}'; \
         read l; exit 3"
    );
    let t = StdioTransport::spawn(sh(&script), options()).await.unwrap();
    assert_eq!(t.server().protocol_version, "2025-06-18");
    assert_eq!(t.server().instructions.as_deref(), Some("hi"));
    assert_eq!(
        t.list_all_tools().await.unwrap(),
        vec![json!({"name": "t"})]
    );
    let e = t.call_tool("t", json!({}), None).await;
    assert!(matches!(e, Err(McpError::Transport(_))), "{e:?}");
    let status = t.shutdown(Duration::from_secs(5)).await.unwrap();
    assert_eq!(status.code(), Some(3));
}

#[tokio::test]
async fn shutdown_kills_a_child_that_does_not_stop() {
    let script = format!("trap '' TERM; read l; echo '{INIT}'; read l; sleep 600");
    let t = StdioTransport::spawn(sh(&script), options()).await.unwrap();
    let status = t.shutdown(Duration::from_millis(200)).await.unwrap();
    assert!(!status.success());
}

#[tokio::test]
async fn a_child_that_is_not_an_mcp_server_fails_the_handshake() {
    let e = StdioTransport::spawn(sh("read l; echo 'hello'; exit 0"), options()).await;
    assert!(matches!(e, Err(McpError::Transport(_))), "{e:?}");
    let e = StdioTransport::spawn(Command::new("/nonexistent/server"), options()).await;
    assert!(matches!(e, Err(McpError::Transport(m)) if m.contains("cannot start")));
}

/// Whether a process is gone or a zombie waiting to be reaped.
fn stopped(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn dropping_the_transport_kills_the_child() {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return; // no procfs to look at (not Linux)
    }
    let script = format!("read l; echo '{INIT}'; read l; exec sleep 600");
    let t = StdioTransport::spawn(sh(&script), options()).await.unwrap();
    let pid = t.id().unwrap();
    assert!(!stopped(pid));
    drop(t);
    let mut waited = 0;
    while !stopped(pid) && waited < 100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(stopped(pid), "the child {pid} still runs after the drop");
}
