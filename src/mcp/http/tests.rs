//! The HTTP transport against a small server written here with axum: JSON
//! and event-stream answers, the server's notifications and requests
//! inside an answer and on its own stream, garbage, answers over the
//! bound, a redirect to another host, a stream that never ends, a session
//! that expires, HTTP errors, cancellation and the session's end.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use super::*;
use crate::mcp::{BoxFuture, RequestHandler, RpcError};

/// What the server saw and how it behaves.
#[derive(Default)]
pub(super) struct Seen {
    /// Every POSTed message, with the session header it came with.
    pub(super) posts: Vec<(Option<String>, Option<String>, Value)>,
    /// How many handshakes; the session id is `s{n}`.
    sessions: usize,
    gets: usize,
    deletes: Vec<Option<String>>,
}

#[derive(Clone, Default)]
pub(super) struct Server {
    seen: Arc<Mutex<Seen>>,
    /// Whether GET opens a stream (else 405).
    offers_stream: bool,
    /// The port, for the redirect to another host.
    port: u16,
}

impl Server {
    pub(super) fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

fn json_answer(id: &Value, result: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    respond(200, "application/json", Body::from(body))
}

fn respond(status: u16, content_type: &str, body: Body) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An event stream of `events` (each a JSON message), then either the end
/// or, with `forever`, a notification every 50 ms.
fn events(events: Vec<Value>, forever: bool) -> Response {
    let mut chunks: Vec<String> = events
        .into_iter()
        .map(|e| format!("id: e{}\ndata: {e}\n\n", e["id"]))
        .collect();
    chunks.insert(0, ": opening comment\n\n".into());
    let stream = futures_util::stream::unfold((chunks, 0usize), move |(chunks, at)| async move {
        if at < chunks.len() {
            let chunk = Bytes::from(chunks[at].clone());
            return Some((Ok::<_, Infallible>(chunk), (chunks, at + 1)));
        }
        if !forever {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "tick"}});
        Some((Ok(Bytes::from(format!("data: {note}\n\n"))), (chunks, at)))
    });
    respond(200, "text/event-stream", Body::from_stream(stream))
}

async fn post_mcp(State(server): State<Server>, headers: HeaderMap, body: Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let session = header(&headers, "mcp-session-id");
    let version = header(&headers, "mcp-protocol-version");
    server
        .seen()
        .posts
        .push((session.clone(), version, message.clone()));
    let id = message["id"].clone();
    let Some(method) = message["method"].as_str() else {
        return respond(202, "text/plain", Body::empty()); // a response of the client's
    };
    if method.starts_with("notifications/") {
        return respond(202, "text/plain", Body::empty());
    }
    if method == "initialize" {
        let n = {
            let mut seen = server.seen();
            seen.sessions += 1;
            seen.sessions
        };
        let mut answer = json_answer(
            &id,
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "axum-test"}}),
        );
        let value = format!("s{n}").parse().unwrap_or_else(|e| panic!("{e}"));
        answer.headers_mut().insert("mcp-session-id", value);
        return answer;
    }
    if session.is_none() {
        return respond(
            400,
            "application/json",
            Body::from(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no session"}}"#,
            ),
        );
    }
    if method == "tools/list" {
        return match message["params"]["cursor"].as_str() {
            Some("p2") => json_answer(&id, json!({"tools": [{"name": "b"}]})),
            _ => json_answer(&id, json!({"tools": [{"name": "a"}], "nextCursor": "p2"})),
        };
    }
    let tool = message["params"]["name"].as_str().unwrap_or_default();
    match tool {
        "echo" => json_answer(&id, json!({"content": [{"type": "text", "text": "hi"}]})),
        "events" => events(
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
                json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}),
                json!({"jsonrpc": "2.0", "id": 999_999, "result": {}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "via": "sse"}}),
            ],
            false,
        ),
        "garbage" => respond(200, "application/json", Body::from("this is not json")),
        "bad-type" => respond(200, "text/html", Body::from("<html>")),
        "huge" => json_answer(&id, json!({"blob": "x".repeat(10_000)})),
        "huge-event" => events(
            vec![json!({"jsonrpc": "2.0", "id": id, "result": {"blob": "x".repeat(10_000)}})],
            false,
        ),
        "endless" => events(vec![], true),
        "cut-short" => events(vec![], false),
        "redirect" => Response::builder()
            .status(307)
            .header("location", format!("http://localhost:{}/mcp", server.port))
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("{e}")),
        "expire" if session.as_deref() == Some("s1") => respond(404, "text/plain", Body::empty()),
        "expire" => json_answer(&id, json!({"content": [], "session": session})),
        "fail" => respond(
            503,
            "application/json",
            Body::from(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"overloaded"}}"#,
            ),
        ),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            json_answer(&id, json!({}))
        }
        _ => json_answer(&id, json!({"content": []})),
    }
}

async fn get_mcp(State(server): State<Server>) -> Response {
    server.seen().gets += 1;
    if !server.offers_stream {
        return respond(405, "text/plain", Body::empty());
    }
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let chunk = format!("id: g1\ndata: {changed}\n\n");
    let stream = futures_util::stream::unfold(Some(chunk), |chunk| async move {
        match chunk {
            Some(c) => Some((Ok::<_, Infallible>(Bytes::from(c)), None)),
            None => {
                // Then stays open, quiet.
                tokio::time::sleep(Duration::from_secs(3600)).await;
                None
            }
        }
    });
    respond(200, "text/event-stream", Body::from_stream(stream))
}

async fn delete_mcp(State(server): State<Server>, headers: HeaderMap) -> StatusCode {
    server
        .seen()
        .deletes
        .push(header(&headers, "mcp-session-id"));
    StatusCode::OK
}

/// Starts the server on 127.0.0.1 and gives its URL.
pub(super) async fn start(offers_stream: bool) -> (String, Server) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    let server = Server {
        offers_stream,
        port,
        ..Server::default()
    };
    let app = Router::new()
        .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
        .with_state(server.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/mcp"), server)
}

/// Answers `roots/list`.
struct Roots;

impl RequestHandler for Roots {
    fn handle(
        &self,
        method: String,
        _: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        Box::pin(async move {
            match method.as_str() {
                "roots/list" => Ok(json!({"roots": [{"uri": "file:///srv"}]})),
                _ => Err(RpcError::method_not_found(&method)),
            }
        })
    }
}

fn options() -> ConnectOptions {
    ConnectOptions {
        request_timeout: Duration::from_millis(800),
        max_line_bytes: 4096,
        handler: Arc::new(Roots),
        ..ConnectOptions::default()
    }
}

async fn connect(url: &str) -> HttpTransport {
    let headers = BTreeMap::from([("X-Api-Key".to_string(), "k".to_string())]);
    HttpTransport::connect(url, &headers, options())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn call(t: &HttpTransport, tool: &str) -> Result<Value, McpError> {
    t.call_tool(tool, json!({}), None).await
}

/// Waits (a bounded while) until `check` holds of what the server saw.
async fn eventually(server: &Server, check: impl Fn(&Seen) -> bool) -> bool {
    for _ in 0..100 {
        if check(&server.seen()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn handshake_session_headers_pages_and_json_answers() {
    let (url, server) = start(false).await;
    let t = connect(&url).await;
    assert_eq!(t.server().protocol_version, "2025-06-18");
    assert_eq!(t.server().info["name"], "axum-test");
    assert_eq!(t.session_id().as_deref(), Some("s1"));
    let tools = t.list_all_tools().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tools, vec![json!({"name": "a"}), json!({"name": "b"})]);
    assert_eq!(
        call(&t, "echo").await.unwrap_or_else(|e| panic!("{e}"))["content"][0]["text"],
        "hi"
    );
    let seen = server.seen();
    // initialize goes without a session; everything after carries it and
    // the negotiated version.
    assert_eq!(seen.posts[0].0, None);
    assert_eq!(seen.posts[0].2["method"], "initialize");
    assert_eq!(seen.posts[1].2["method"], "notifications/initialized");
    for (session, version, _) in &seen.posts[1..] {
        assert_eq!(session.as_deref(), Some("s1"));
        assert_eq!(version.as_deref(), Some("2025-06-18"));
    }
}

#[tokio::test]
async fn an_event_stream_answer_with_notifications_and_a_server_request() {
    let (url, server) = start(false).await;
    let t = connect(&url).await;
    let mut notes = t.subscribe();
    let result = call(&t, "events").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(result["via"], "sse");
    let note = notes.try_recv().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(note.method, "notifications/progress");
    // The handler's answer to roots/list is POSTed back under the
    // server's id.
    assert!(
        eventually(&server, |s| s.posts.iter().any(|(_, _, m)| m["id"]
            == "srv-1"
            && m["result"]["roots"][0]["uri"] == "file:///srv"))
        .await
    );
}

#[tokio::test]
async fn garbage_bad_types_and_answers_over_the_bound_are_protocol_errors() {
    let (url, _server) = start(false).await;
    let t = connect(&url).await;
    for (tool, want) in [
        ("garbage", "not JSON-RPC"),
        ("bad-type", "content type `text/html`"),
        ("huge", "more than 4096 bytes"),
        ("huge-event", "more than 4096 bytes"),
    ] {
        let e = call(&t, tool).await;
        assert!(
            matches!(&e, Err(McpError::Protocol(m)) if m.contains(want)),
            "{tool}: {e:?}"
        );
    }
    // The connection still works.
    assert!(call(&t, "echo").await.is_ok());
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed() {
    let (url, _server) = start(false).await;
    let t = connect(&url).await;
    let e = call(&t, "redirect").await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.contains("redirected") && m.contains("localhost")),
        "{e:?}"
    );
}

#[tokio::test]
async fn an_endless_stream_fails_at_the_timeout_and_the_server_is_told() {
    let (url, server) = start(false).await;
    let t = connect(&url).await;
    let e = call(&t, "endless").await;
    assert_eq!(e, Err(McpError::Timeout(Duration::from_millis(800))));
    assert!(
        eventually(&server, |s| s
            .posts
            .iter()
            .any(|(_, _, m)| m["method"] == "notifications/cancelled"
                && m["params"]["reason"] == "timeout"))
        .await
    );
    let e = call(&t, "cut-short").await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.contains("ended before the answer")),
        "{e:?}"
    );
}

#[tokio::test]
async fn an_expired_session_is_initialized_once_again() {
    let (url, server) = start(false).await;
    let t = connect(&url).await;
    let result = call(&t, "expire").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(result["session"], "s2");
    assert_eq!(server.seen().sessions, 2);
    assert_eq!(t.session_id().as_deref(), Some("s2"));
}

#[tokio::test]
async fn http_errors_name_the_status_and_the_servers_message() {
    let (url, _server) = start(false).await;
    let t = connect(&url).await;
    let e = call(&t, "fail").await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.contains("HTTP 503") && m.contains("overloaded")),
        "{e:?}"
    );
    let e = HttpTransport::connect("http://127.0.0.1:9/mcp", &BTreeMap::new(), options()).await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.contains("cannot reach")),
        "{e:?}"
    );
    let bad = BTreeMap::from([("Bad Header".to_string(), "v".to_string())]);
    let e = HttpTransport::connect(&url, &bad, options()).await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.contains("not an HTTP header name")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_cancelled_handle_stops_the_wait_and_tells_the_server() {
    let (url, server) = start(false).await;
    let t = Arc::new(connect(&url).await);
    let handle = CallHandle::new();
    let call = tokio::spawn({
        let (t, handle) = (t.clone(), handle.clone());
        async move {
            let params = json!({"name": "slow", "arguments": {}});
            t.request_with("tools/call", Some(params), &handle).await
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle.cancel(Some("not wanted")).await;
    let outcome = call.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome, Err(CallHandle::cancelled_error()));
    assert!(
        eventually(&server, |s| s
            .posts
            .iter()
            .any(|(_, _, m)| m["method"] == "notifications/cancelled"
                && m["params"]["reason"] == "not wanted"
                && m["params"]["requestId"].is_i64()))
        .await
    );
}

#[tokio::test]
async fn the_servers_own_stream_delivers_notifications_and_close_ends_the_session() {
    let (url, server) = start(true).await;
    let t = connect(&url).await;
    let mut notes = t.subscribe();
    let note = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(note.method, "notifications/tools/list_changed");
    t.close().await;
    assert_eq!(server.seen().deletes, vec![Some("s1".to_string())]);
}

#[tokio::test]
async fn a_server_without_a_stream_is_asked_once() {
    let (url, server) = start(false).await;
    let t = connect(&url).await;
    assert!(eventually(&server, |s| s.gets == 1).await);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(server.seen().gets, 1);
    drop(t);
    assert!(eventually(&server, |s| s.deletes.len() == 1).await);
}
