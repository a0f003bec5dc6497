//! The HTTP transport offering MCP 2026-07-28: against a stateless server
//! written here (discover answered; every request checked for its
//! envelope and routing headers; errors with HTTP error statuses, as the
//! Python SDK's server sends them), and the fallback to `initialize`
//! against the session server of `tests.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use super::*;

/// Each POST: its routing headers (version, method, name, session) and body.
type Posts = Arc<Mutex<Vec<([Option<String>; 4], Value)>>>;

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

fn answer(status: u16, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn post_stateless(State(posts): State<Posts>, headers: HeaderMap, body: Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let routing = [
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "mcp-session-id",
    ]
    .map(|h| header(&headers, h));
    posts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((routing, message.clone()));
    let id = message["id"].clone();
    let version = &message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
    if message.get("id").is_none() {
        return answer(202, json!({}));
    }
    if version != "2026-07-28" {
        let e = json!({"code": -32600, "message": "this server is stateless"});
        return answer(400, json!({"jsonrpc": "2.0", "id": id, "error": e}));
    }
    match message["method"].as_str() {
        Some("server/discover") => answer(
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "axum-2026"}}}}),
        ),
        Some("tools/call") if message["params"]["name"] == "echo" => answer(
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}}),
        ),
        _ => {
            let e = json!({"code": -32601, "message": "Method not found"});
            answer(404, json!({"jsonrpc": "2.0", "id": id, "error": e}))
        }
    }
}

fn offering() -> ConnectOptions {
    ConnectOptions {
        request_timeout: Duration::from_millis(800),
        offer_stateless: true,
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn a_stateless_server_gets_the_envelope_and_routing_headers_and_no_session() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    let posts = Posts::default();
    let app = Router::new()
        .route("/mcp", post(post_stateless))
        .with_state(posts.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let t = HttpTransport::connect(&url, &BTreeMap::new(), offering())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(t.server().is_stateless());
    assert_eq!(t.server().info["name"], "axum-2026");
    assert_eq!(t.session_id(), None);
    let echo = t.call_tool("echo", json!({}), None).await;
    assert_eq!(
        echo.unwrap_or_else(|e| panic!("{e}"))["content"][0]["text"],
        "hi"
    );
    // A JSON-RPC error sent with an HTTP error status is the server's error.
    let e = t.call_tool("café", json!({}), None).await;
    assert!(
        matches!(&e, Err(McpError::Rpc(rpc)) if rpc.code == -32601),
        "{e:?}"
    );
    t.notify("notifications/roots/list_changed", None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    t.close().await;
    let posts = posts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let methods: Vec<&str> = posts
        .iter()
        .filter_map(|(_, m)| m["method"].as_str())
        .collect();
    assert_eq!(methods, ["server/discover", "tools/call", "tools/call"]);
    let v = Some("2026-07-28".to_string());
    assert_eq!(
        posts[0].0,
        [v.clone(), Some("server/discover".into()), None, None]
    );
    assert_eq!(
        posts[1].0,
        [
            v.clone(),
            Some("tools/call".into()),
            Some("echo".into()),
            None
        ]
    );
    // A name HTTP cannot carry as it is goes in the base64 form.
    assert_eq!(posts[2].0[2].as_deref(), Some("=?base64?Y2Fmw6k=?="));
    assert_eq!(
        posts[1].1["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "mcppol"
    );
}

#[tokio::test]
async fn a_session_server_gets_initialize_after_the_probe() {
    let (url, server) = super::tests::start(false).await;
    let t = HttpTransport::connect(&url, &BTreeMap::new(), offering())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!t.server().is_stateless());
    assert_eq!(t.server().protocol_version, "2025-06-18");
    assert_eq!(t.session_id().as_deref(), Some("s1"));
    let seen = server.seen();
    assert_eq!(seen.posts[0].2["method"], "server/discover");
    assert_eq!(seen.posts[1].2["method"], "initialize");
}

#[test]
fn header_values_as_http_carries_them() {
    assert_eq!(header_value("a__echo"), "a__echo");
    assert_eq!(header_value(" a"), "=?base64?IGE=?=");
    assert_eq!(base64(b"abc"), "YWJj");
}
