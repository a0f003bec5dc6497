//! The client connection's unit tests: the handshake (and the
//! `server/discover` probe and its fallback), pages, notifications, the
//! server's requests, and each way the server fails.
use super::*;
use crate::mcp::jsonrpc::RpcError;
use crate::mcp::META_CLIENT_CAPABILITIES;
use tokio::io::{AsyncWriteExt, BufReader};

/// A scripted server over in-memory pipes: answers initialize, pings
/// the client, lists tools in two pages, and then stops answering.
async fn fake_server(stream: tokio::io::DuplexStream, version: &'static str) -> Vec<Value> {
    let (r, mut w) = tokio::io::split(stream);
    let mut lines = LineReader::new(BufReader::new(r), 1 << 20);
    let mut seen = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let msg: Value = serde_json::from_slice(line).unwrap();
        seen.push(msg.clone());
        let id = msg.get("id").cloned();
        let answer = match msg["method"].as_str() {
            Some("server/discover") if version == "2026-07-28" => Some(
                json!({"supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}},
                    "instructions": "be stateless", "resultType": "complete",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake26"}}}),
            ),
            // A 2025-11-25 server does not know discover; a 2025-06-18
            // one says nothing at all.
            Some("server/discover") if version == "2025-11-25" => {
                let e = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
                w.write_all(format!("{e}\n").as_bytes()).await.unwrap();
                None
            }
            Some("server/discover") => None,
            Some("initialize") => Some(
                json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "fake"}, "instructions": "be nice"}),
            ),
            Some("notifications/initialized") => {
                let ping = json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"});
                w.write_all(format!("{ping}\n").as_bytes()).await.unwrap();
                let changed =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                w.write_all(format!("{changed}\n").as_bytes())
                    .await
                    .unwrap();
                None
            }
            Some("tools/list") if msg["params"]["cursor"] == "p2" => {
                Some(json!({"tools": [{"name": "b"}]}))
            }
            Some("tools/list") => Some(json!({"tools": [{"name": "a"}], "nextCursor": "p2"})),
            Some("tools/call") if msg["params"]["name"] == "boom" => {
                let e = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool"}});
                w.write_all(format!("{e}\n").as_bytes()).await.unwrap();
                None
            }
            Some("tools/call") if msg["params"]["name"] == "die" => break,
            Some("tools/call") if msg["params"]["name"] == "huge" => {
                w.write_all(&vec![b'x'; 5000]).await.unwrap();
                w.write_all(b"\n").await.unwrap();
                None
            }
            _ => None,
        };
        if let (Some(id), Some(result)) = (id, answer) {
            let r = json!({"jsonrpc": "2.0", "id": id, "result": result});
            w.write_all(format!("{r}\n").as_bytes()).await.unwrap();
        }
    }
    seen
}

fn options() -> ConnectOptions {
    ConnectOptions {
        request_timeout: Duration::from_millis(500),
        max_line_bytes: 4096,
        ..ConnectOptions::default()
    }
}

async fn connected(
    version: &'static str,
) -> (
    Result<Connection, McpError>,
    tokio::task::JoinHandle<Vec<Value>>,
) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(fake_server(server, version));
    let (r, w) = tokio::io::split(client);
    (
        Connection::connect(BufReader::new(r), w, options()).await,
        server,
    )
}

#[tokio::test]
async fn handshake_pages_notifications_and_errors() {
    let (conn, _server) = connected("2025-06-18").await;
    let conn = conn.unwrap();
    assert_eq!(conn.server().protocol_version, "2025-06-18");
    assert_eq!(conn.server().instructions.as_deref(), Some("be nice"));
    let mut notes = conn.subscribe();
    let tools = conn.list_all_tools().await.unwrap();
    assert_eq!(tools, vec![json!({"name": "a"}), json!({"name": "b"})]);
    assert_eq!(
        conn.call_tool("boom", json!({}), None).await,
        Err(McpError::Rpc(RpcError::new(-32602, "unknown tool")))
    );
    // The list_changed notification may have come before the
    // subscription; a new one after it is delivered.
    let _ = notes.try_recv();
}

async fn offering_stateless(
    version: &'static str,
) -> (Connection, tokio::task::JoinHandle<Vec<Value>>) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(fake_server(server, version));
    let (r, w) = tokio::io::split(client);
    let options = ConnectOptions {
        offer_stateless: true,
        capabilities: json!({"elicitation": {}}),
        ..options()
    };
    let conn = Connection::connect(BufReader::new(r), w, options)
        .await
        .unwrap();
    (conn, server)
}

#[tokio::test]
async fn a_stateless_server_is_spoken_to_without_a_handshake() {
    let (conn, server) = offering_stateless("2026-07-28").await;
    assert!(conn.server().is_stateless());
    assert_eq!(conn.server().protocol_version, "2026-07-28");
    assert_eq!(conn.server().info["name"], "fake26");
    assert_eq!(conn.server().instructions.as_deref(), Some("be stateless"));
    let meta = json!({"progressToken": 7, META_CLIENT_CAPABILITIES: {"sampling": {}}});
    let _ = conn.call_tool("boom", json!({}), Some(meta)).await;
    // No client notification in 2026-07-28.
    conn.notify("notifications/roots/list_changed", None)
        .await
        .unwrap();
    drop(conn);
    let seen = server.await.unwrap();
    let methods: Vec<&str> = seen.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(methods, ["server/discover", "tools/call"]);
    let meta = &seen[1]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "mcppol");
    assert_eq!(meta["progressToken"], 7, "the request's own keys stay");
    assert_eq!(
        meta[META_CLIENT_CAPABILITIES],
        json!({"sampling": {}}),
        "a request's own capabilities win over the connection's"
    );
    assert_eq!(
        seen[0]["params"]["_meta"][META_CLIENT_CAPABILITIES],
        json!({"elicitation": {}})
    );
}

#[tokio::test]
async fn a_server_that_does_not_know_discover_gets_initialize() {
    let (conn, server) = offering_stateless("2025-11-25").await;
    assert!(!conn.server().is_stateless());
    assert_eq!(conn.server().protocol_version, "2025-11-25");
    // Lines are written in order: once this is answered, all went before.
    conn.list_all_tools().await.unwrap();
    drop(conn);
    let seen = server.await.unwrap();
    let methods: Vec<&str> = seen.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        &methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
    assert!(
        seen[2].get("params").is_none(),
        "no envelope after a handshake"
    );
}

#[tokio::test(start_paused = true)]
async fn a_probe_without_an_answer_falls_back_within_its_bound() {
    let started = tokio::time::Instant::now();
    let (conn, _server) = offering_stateless("2025-06-18").await;
    assert_eq!(conn.server().protocol_version, "2025-06-18");
    // The probe waited at most the request timeout (500 ms here).
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_probe_error_falls_back_unless_no_version_is_shared() {
    let rpc = |code, data: Option<Value>| {
        let mut e = RpcError::new(code, "no");
        e.data = data;
        McpError::Rpc(e)
    };
    assert!(probe_failed(rpc(-32601, None)).is_ok());
    assert!(probe_failed(McpError::Timeout(Duration::from_secs(1))).is_ok());
    let old = rpc(-32022, Some(json!({"supported": ["2025-11-25"]})));
    assert!(probe_failed(old).is_ok());
    let newer = rpc(-32022, Some(json!({"supported": ["2031-01-01"]})));
    assert!(matches!(probe_failed(newer), Err(McpError::Protocol(m)) if m.contains("2031-01-01")));
    let locked = rpc(-32022, Some(json!({"supported": ["2026-07-28"]})));
    assert!(initialize_refused_as_stateless(&locked));
    assert!(!initialize_refused_as_stateless(&rpc(-32601, None)));
    let only_handshake = json!({"supportedVersions": ["2025-11-25"]});
    assert!(ServerInfo::from_discover(&only_handshake).is_err());
}

#[tokio::test]
async fn refuses_an_unknown_protocol_version() {
    let (conn, _server) = connected("2024-11-05").await;
    assert!(matches!(conn, Err(McpError::Protocol(m)) if m.contains("2024-11-05")));
}

#[tokio::test]
async fn answers_server_pings_and_delivers_notifications() {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(client);
    let conn = Connection::start(BufReader::new(r), w, &options());
    let mut notes = conn.subscribe();
    let server = tokio::spawn(fake_server(server, "2025-11-25"));
    conn.notify("notifications/initialized", None)
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.method, "notifications/tools/list_changed");
    drop(conn);
    let seen = server.await.unwrap();
    assert!(seen
        .iter()
        .any(|m| m["id"] == "s1" && m["result"] == json!({})));
}

/// Answers `roots/list` with one root; everything else as the default.
struct Roots;

impl RequestHandler for Roots {
    fn handle(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        if method == "roots/list" {
            Box::pin(async { Ok(json!({"roots": [{"uri": "file:///srv"}]})) })
        } else {
            DefaultHandler.handle(method, params)
        }
    }
}

#[tokio::test]
async fn server_requests_go_to_the_handler() {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(client);
    let opts = ConnectOptions {
        handler: Arc::new(Roots),
        ..options()
    };
    let conn = Connection::start(BufReader::new(r), w, &opts);
    let (sr, mut sw) = tokio::io::split(server);
    let mut lines = LineReader::new(BufReader::new(sr), 1 << 20);
    for (id, method) in [(1, "roots/list"), (2, "sampling/createMessage")] {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method});
        sw.write_all(format!("{req}\n").as_bytes()).await.unwrap();
        let line = lines.next_line().await.unwrap().unwrap().to_vec();
        let answer: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(answer["id"], id);
        if id == 1 {
            assert_eq!(answer["result"]["roots"][0]["uri"], "file:///srv");
        } else {
            assert_eq!(answer["error"]["code"], -32601);
        }
    }
    drop(conn);
}

#[tokio::test]
async fn a_dying_server_fails_what_is_pending_and_what_comes_after() {
    let (conn, _server) = connected("2025-11-25").await;
    let conn = conn.unwrap();
    let e = conn.call_tool("die", json!({}), None).await;
    assert!(matches!(e, Err(McpError::Transport(_))), "{e:?}");
    let e = conn.list_tools(None).await;
    assert!(matches!(e, Err(McpError::Transport(_))), "{e:?}");
}

#[tokio::test]
async fn a_line_over_the_bound_is_a_protocol_error() {
    let (conn, _server) = connected("2025-11-25").await;
    let conn = conn.unwrap();
    let e = conn.call_tool("huge", json!({}), None).await;
    assert!(
        matches!(e, Err(McpError::Protocol(ref m)) if m.contains("4096")),
        "{e:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stops_reading_fails_what_is_pending_at_once() {
    // Separate pipes each way: the server stops reading, its output
    // stays open.
    let (to_server, server_in) = tokio::io::duplex(64);
    let (_server_out, from_server) = tokio::io::duplex(64);
    let conn = Connection::start(BufReader::new(from_server), to_server, &options());
    drop(server_in);
    let e = conn.call_tool("any", json!({}), None).await;
    assert!(
        matches!(&e, Err(McpError::Transport(m)) if m.starts_with("writing to the server failed")),
        "{e:?}"
    );
    assert_eq!(conn.peer.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_times_out_and_is_cancelled() {
    let (conn, server) = connected("2025-11-25").await;
    let conn = conn.unwrap();
    let e = conn.call_tool("silent", json!({}), None).await;
    assert_eq!(e, Err(McpError::Timeout(Duration::from_millis(500))));
    assert_eq!(conn.peer.pending(), 0);
    // Let the writer send the cancellation before the pipes close.
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(conn);
    let seen = server.await.unwrap();
    assert!(seen
        .iter()
        .any(|m| m["method"] == "notifications/cancelled"));
}
