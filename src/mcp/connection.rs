//! A JSON-RPC client over any pair of byte streams: the server as a
//! [`Peer`] (request ids, the bounded map of pending requests, timeouts
//! and cancellation, fail-all on close) plus the MCP handshake, and a
//! reader that delivers notifications to subscribers and hands the
//! server's own requests to a [`RequestHandler`]. The stdio transport runs
//! it over a child's pipes; tests run it over in-memory pipes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use super::framing::{FrameError, LineReader, DEFAULT_MAX_LINE_BYTES};
use super::handle::CallHandle;
use super::jsonrpc::{codes, Message, Notification, Request, Response, RpcError};
use super::peer::{Peer, Wait};
use super::transport::{
    envelope, initialize_refused_as_stateless, probe_failed, stamp, BoxFuture, DefaultHandler,
    McpError, RequestHandler, ServerInfo, Transport, DISCOVER_TIMEOUT, PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSIONS,
};

/// How a connection behaves.
#[derive(Clone)]
pub struct ConnectOptions {
    /// The longest line read (default 16 MiB); a longer one closes the
    /// connection with a protocol error.
    pub max_line_bytes: usize,
    /// How long a request waits for its answer (default 60 s).
    pub request_timeout: Duration,
    /// The client's capabilities, sent in `initialize` (default `{}`).
    pub capabilities: Value,
    /// `clientInfo` sent in `initialize`.
    pub client_info: Value,
    /// Answers the server's requests (default: `ping` only).
    pub handler: Arc<dyn RequestHandler>,
    /// The most requests waiting for an answer at once (default
    /// [`DEFAULT_MAX_PENDING`]); one more fails at once with a transport
    /// error instead of growing the pending map.
    pub max_pending: usize,
    /// Offer MCP 2026-07-28 first: probe `server/discover` (waiting at
    /// most [`DISCOVER_TIMEOUT`](super::DISCOVER_TIMEOUT)) and, when the
    /// server answers it, speak to it without a session, every request
    /// carrying the `_meta` envelope (protocol version, `capabilities`,
    /// `client_info`); otherwise, and by default, the `initialize`
    /// handshake.
    pub offer_stateless: bool,
}

/// The default bound on requests waiting for an answer.
pub const DEFAULT_MAX_PENDING: usize = 1024;

/// The most requests of the server's that are handled at once; the server's
/// requests past it are answered with an error at once.
pub const MAX_SERVER_REQUESTS: usize = 64;

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("request_timeout", &self.request_timeout)
            .field("max_pending", &self.max_pending)
            .field("offer_stateless", &self.offer_stateless)
            .finish_non_exhaustive()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            request_timeout: Duration::from_secs(60),
            capabilities: json!({}),
            client_info: json!({"name": "mcppol", "version": env!("CARGO_PKG_VERSION")}),
            handler: Arc::new(DefaultHandler),
            max_pending: DEFAULT_MAX_PENDING,
            offer_stateless: false,
        }
    }
}

/// A running JSON-RPC client connection: the server as a peer, and a
/// reader that delivers its answers, its notifications to subscribers and
/// its requests to the handler. Dropping it stops its tasks.
pub struct Connection {
    peer: Arc<Peer>,
    notifications: broadcast::Sender<Notification>,
    reader: AbortHandle,
    timeout: Duration,
    server: ServerInfo,
    /// The `_meta` envelope of every request, for a stateless server.
    envelope: Option<Value>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.peer.stop_writer();
        self.peer
            .close(McpError::Transport("the connection was closed".into()));
    }
}

impl Connection {
    /// Starts the reader and writer tasks (on the current tokio runtime)
    /// and runs the `initialize` handshake: offers the newest protocol
    /// version, accepts any of [`PROTOCOL_VERSIONS`], then sends
    /// `notifications/initialized`. With
    /// [`ConnectOptions::offer_stateless`], `server/discover` first: a
    /// server that answers it is spoken to in MCP 2026-07-28, no handshake.
    pub async fn connect<R, W>(
        reader: R,
        writer: W,
        options: ConnectOptions,
    ) -> Result<Connection, McpError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut conn = Connection::start(reader, writer, &options);
        if options.offer_stateless && conn.discover(&options).await? {
            return Ok(conn);
        }
        match conn.initialize(&options).await {
            // A server that settled on 2026-07-28 after a probe this side
            // stopped waiting for: one more probe.
            Err(e) if options.offer_stateless && initialize_refused_as_stateless(&e) => {
                if conn.discover(&options).await? {
                    Ok(conn)
                } else {
                    Err(e)
                }
            }
            Err(e) => Err(e),
            Ok(()) => Ok(conn),
        }
    }

    async fn initialize(&mut self, options: &ConnectOptions) -> Result<(), McpError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": options.capabilities,
            "clientInfo": options.client_info,
        });
        let result = self.request_raw("initialize", Some(params), None).await?;
        self.server = ServerInfo::from_initialize(&result)?;
        self.notify_raw("notifications/initialized", None).await
    }

    /// The `server/discover` probe, within [`DISCOVER_TIMEOUT`]: true when
    /// the server speaks 2026-07-28 (and is set up so), false to fall back
    /// to `initialize`.
    async fn discover(&mut self, options: &ConnectOptions) -> Result<bool, McpError> {
        let envelope = envelope(
            STATELESS_PROTOCOL_VERSIONS[0],
            &options.capabilities,
            &options.client_info,
        );
        let params = json!({ "_meta": envelope });
        let wait = Wait::within(DISCOVER_TIMEOUT.min(self.timeout), None);
        let answer = self
            .peer
            .request("server/discover", Some(params), wait)
            .await;
        match answer.map(|r| ServerInfo::from_discover(&r)) {
            Ok(Ok(server)) => {
                self.server = server;
                self.envelope = Some(envelope);
                Ok(true)
            }
            Ok(Err(_)) => Ok(false),
            Err(e) => probe_failed(e).map(|()| false),
        }
    }

    /// Starts the tasks without a handshake.
    pub fn start<R, W>(reader: R, writer: W, options: &ConnectOptions) -> Connection
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let peer = Arc::new(Peer::start("server", writer, options.max_pending, None));
        let (notifications, _) = broadcast::channel(256);
        let reader_task = tokio::spawn(read_loop(
            LineReader::new(reader, options.max_line_bytes),
            peer.clone(),
            notifications.clone(),
            options.handler.clone(),
        ));
        Connection {
            peer,
            notifications,
            reader: reader_task.abort_handle(),
            timeout: options.request_timeout,
            server: ServerInfo::default(),
            envelope: None,
        }
    }

    /// Whether the connection has closed, and why.
    pub fn closed(&self) -> Option<McpError> {
        self.peer.closed_now()
    }

    async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        handle: Option<&CallHandle>,
    ) -> Result<Value, McpError> {
        let wait = Wait::within(self.timeout, handle);
        let params = match &self.envelope {
            Some(envelope) => Some(stamp(params, envelope)),
            None => params,
        };
        self.peer.request(method, params, wait).await
    }

    async fn notify_raw(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        if let Some(why) = self.closed() {
            return Err(why);
        }
        // MCP 2026-07-28 has no notification from client to server but
        // the cancellation of a request.
        if self.envelope.is_some() && method != "notifications/cancelled" {
            return Ok(());
        }
        if self.peer.notify(method, params).await {
            Ok(())
        } else {
            Err(McpError::Transport("the connection is closed".into()))
        }
    }
}

impl Transport for Connection {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.request_raw(method, params, None))
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.request_raw(method, params, Some(handle)))
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(self.notify_raw(method, params))
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.notifications.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        &self.server
    }
}

/// Reads the server until its output ends, breaks the line bound, or the
/// peer closes (writing to the server failed): then every request still
/// waiting fails at once, with why. Holds the peer until the connection
/// aborts it.
async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: LineReader<R>,
    peer: Arc<Peer>,
    notifications: broadcast::Sender<Notification>,
    handler: Arc<dyn RequestHandler>,
) {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_SERVER_REQUESTS));
    let why = loop {
        let next = tokio::select! {
            next = reader.next_line() => next,
            why = peer.closed() => break why,
        };
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => break McpError::Transport("the server closed the connection".into()),
            Err(FrameError::TooLong { max }) => {
                break McpError::Protocol(format!(
                    "the server sent a line of more than {max} bytes"
                ))
            }
            Err(FrameError::Io(e)) => {
                break McpError::Transport(format!("reading from the server failed: {e}"))
            }
        };
        let message = match Message::parse(line) {
            Ok(m) => m,
            Err(e) => {
                // The line itself is not logged: it may carry results.
                tracing::warn!(target: "mcppol::mcp", error = %e, "ignored a message that is not JSON-RPC");
                continue;
            }
        };
        match message {
            Message::Response(Response { id, outcome }) => {
                if !peer.resolve(&id, outcome) {
                    tracing::debug!(target: "mcppol::mcp", %id, "a response to no pending request")
                }
            }
            Message::Notification(n) => {
                let _ = notifications.send(n);
            }
            Message::Request(Request { id, method, params }) => {
                // A server that floods requests gets errors, not tasks.
                let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                    let busy = RpcError::new(
                        codes::INTERNAL_ERROR,
                        format!("more than {MAX_SERVER_REQUESTS} of the server's requests are in flight"),
                    );
                    let _ = peer.try_line(
                        Message::Response(Response {
                            id,
                            outcome: Err(busy),
                        })
                        .to_line(),
                    );
                    continue;
                };
                let handler = handler.clone();
                let peer = peer.clone();
                tokio::spawn(async move {
                    let outcome = handler.handle(method, params).await;
                    peer.respond(id, outcome).await;
                    drop(permit);
                });
            }
        }
    };
    peer.close(why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc::RpcError;
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
}
