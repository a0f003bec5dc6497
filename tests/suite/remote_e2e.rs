//! End to end: the real `@modelcontextprotocol/server-everything` from npm
//! in its streamable-HTTP mode, reached with `HttpTransport` over loopback.
//! `.ci/e2e-deps` installs it into `.e2e/node`. Without it the tests skip
//! with a message, unless `CI` is set: then a missing server fails.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcppol::mcp::{ConnectOptions, HttpTransport, Transport};
use serde_json::json;

/// The server-everything entry point, or `None` (skip).
pub fn everything_js() -> Option<PathBuf> {
    let js = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".e2e/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if js.exists() && which_node() {
        return Some(js);
    }
    if std::env::var_os("CI").is_some() {
        panic!("server-everything is missing under CI: run .ci/e2e-deps");
    }
    eprintln!("skipped: server-everything is not installed (.e2e/ is absent); run .ci/e2e-deps");
    None
}

fn which_node() -> bool {
    Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// server-everything in streamable-HTTP mode on a free loopback port;
/// killed on drop.
pub struct EverythingHttp {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl EverythingHttp {
    /// Starts it and waits (up to 30 s) until its port answers.
    pub fn start(js: &Path) -> EverythingHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new("node")
            .arg(js)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = EverythingHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("server-everything did not listen on port {port} within 30 s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let Some(js) = everything_js() else { return };
    let server = EverythingHttp::start(&js);
    let options = ConnectOptions {
        request_timeout: Duration::from_secs(20),
        ..ConnectOptions::default()
    };
    let t = HttpTransport::connect(&server.url, &BTreeMap::new(), options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(t.session_id().is_some(), "server-everything keeps sessions");
    assert!(["2025-11-25", "2025-06-18"].contains(&t.server().protocol_version.as_str()));
    let tools = t.list_all_tools().await.unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    let result = t
        .call_tool("echo", json!({"message": "over http"}), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(result["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("over http")));
    // Every page of the resources (the server pages them).
    let resources = t
        .list_all_resources()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!resources.is_empty());
    let prompts = t.list_all_prompts().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!prompts.is_empty());
    // An unknown tool is the server's own refusal (an error result or a
    // JSON-RPC error), and the session goes on.
    match t.call_tool("no-such-tool", json!({}), None).await {
        Ok(result) => assert_eq!(result["isError"], true, "{result}"),
        Err(e) => assert!(matches!(e, mcppol::mcp::McpError::Rpc(_)), "{e}"),
    }
    assert!(t.list_tools(None).await.is_ok());
    t.close().await;
}
