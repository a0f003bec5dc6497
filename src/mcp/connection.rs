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
#[path = "connection_tests.rs"]
mod tests;
