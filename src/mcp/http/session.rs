//! What every request to one remote server shares: the client, the
//! endpoint and its headers, the session the server gave (`Mcp-Session-Id`,
//! the negotiated version), request ids, the bound on requests waiting, and
//! the reading of each answer (JSON or events, with the server's own
//! notifications and requests along the way).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode, Url};
use serde_json::{json, Value};
use tokio::sync::{broadcast, Semaphore};

use super::body::{read_bounded, Events};
use super::{cancelled_params, describe, RESPONSE_MESSAGES_BOUND};
use crate::mcp::connection::{ConnectOptions, MAX_SERVER_REQUESTS};
use crate::mcp::handle::CallHandle;
use crate::mcp::jsonrpc::{codes, Id, Message, Notification, Request, Response, RpcError};
use crate::mcp::transport::{
    envelope, initialize_refused_as_stateless, probe_failed, stamp, McpError, ServerInfo,
    DISCOVER_TIMEOUT, PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSIONS,
};

/// The session header (2025-06-18 and later).
pub(super) const SESSION_ID: &str = "mcp-session-id";
/// The negotiated version, on every request after `initialize`.
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// A stateless request's method (2026-07-28).
const METHOD: &str = "mcp-method";
/// A stateless request's tool or prompt name, or resource URI.
const NAME: &str = "mcp-name";
/// The longest session id kept (the specification asks for visible ASCII;
/// a longer one is refused rather than sent back on every request).
const MAX_SESSION_ID_BYTES: usize = 1024;
/// The most times one answer's event stream is resumed (`Last-Event-ID`)
/// after the server closed it before the answer.
const MAX_RESUMES: usize = 5;

/// The session as the server set it up.
#[derive(Debug, Clone, Default)]
pub(super) struct Session {
    /// `Mcp-Session-Id`, when the server keeps sessions.
    pub(super) id: Option<String>,
    /// The negotiated protocol version (sent as `MCP-Protocol-Version`).
    pub(super) version: Option<String>,
    /// How many handshakes made it (a re-initialize after an expiry is
    /// run once however many requests saw the expiry).
    generation: u64,
    /// The `_meta` envelope of every request, for a stateless (2026-07-28)
    /// server: no session, the routing headers on every request.
    pub(super) envelope: Option<Value>,
}

/// The routing headers of one request to a stateless server.
type Routing = Vec<(&'static str, HeaderValue)>;

/// The state every request to the server shares.
pub(super) struct Shared {
    client: reqwest::Client,
    pub(super) url: Url,
    headers: HeaderMap,
    session: Mutex<Session>,
    reinitialize: tokio::sync::Mutex<()>,
    next_id: AtomicI64,
    pub(super) options: ConnectOptions,
    pub(super) notifications: broadcast::Sender<Notification>,
    pending: Arc<Semaphore>,
    server_requests: Arc<Semaphore>,
}

/// An answer: the result, or the server's error.
type Outcome = Result<Value, RpcError>;

impl Shared {
    pub(super) fn new(
        client: reqwest::Client,
        url: Url,
        headers: HeaderMap,
        options: ConnectOptions,
        notifications: broadcast::Sender<Notification>,
    ) -> Shared {
        Shared {
            client,
            url,
            headers,
            session: Mutex::new(Session::default()),
            reinitialize: tokio::sync::Mutex::new(()),
            next_id: AtomicI64::new(1),
            pending: Arc::new(Semaphore::new(options.max_pending.max(1))),
            server_requests: Arc::new(Semaphore::new(MAX_SERVER_REQUESTS)),
            options,
            notifications,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Session> {
        self.session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session as it is now.
    pub(super) fn session(&self) -> Session {
        self.lock().clone()
    }

    /// The most bytes one event or JSON body may have.
    pub(super) fn max_message(&self) -> usize {
        self.options.max_line_bytes
    }

    /// How the server is spoken to: with
    /// [`ConnectOptions::offer_stateless`], `server/discover` first (MCP
    /// 2026-07-28, no session); else, or when the server does not know
    /// it, the `initialize` handshake.
    pub(super) async fn handshake(self: &Arc<Self>) -> Result<ServerInfo, McpError> {
        if !self.options.offer_stateless {
            return self.initialize().await;
        }
        if let Some(server) = self.discover().await? {
            return Ok(server);
        }
        match self.initialize().await {
            Err(e) if initialize_refused_as_stateless(&e) => self.discover().await?.ok_or(e),
            other => other,
        }
    }

    /// The `server/discover` probe, within [`DISCOVER_TIMEOUT`]: the
    /// server's description when it speaks 2026-07-28, `None` to fall back
    /// to `initialize` (an HTTP error, a JSON-RPC error, no answer in time,
    /// a server that cannot be reached, which `initialize` then reports).
    async fn discover(self: &Arc<Self>) -> Result<Option<ServerInfo>, McpError> {
        let version = STATELESS_PROTOCOL_VERSIONS[0];
        let envelope = envelope(
            version,
            &self.options.capabilities,
            &self.options.client_info,
        );
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = Message::Request(Request {
            id: Id::Number(id),
            method: "server/discover".into(),
            params: Some(json!({ "_meta": envelope })),
        })
        .to_line();
        let routing = vec![
            (PROTOCOL_VERSION, HeaderValue::from_static(version)),
            (METHOD, HeaderValue::from_static("server/discover")),
        ];
        let exchange = async {
            let response = self
                .send_with(Method::POST, Some(line), false, None, &routing)
                .await?;
            self.read_stateless_answer(id, response).await
        };
        let wait = DISCOVER_TIMEOUT.min(self.options.request_timeout);
        let answer = match tokio::time::timeout(wait, exchange).await {
            Ok(Ok(Ok(result))) => result,
            Ok(Ok(Err(rpc))) => return probe_failed(McpError::Rpc(rpc)).map(|()| None),
            Ok(Err(_)) | Err(_) => return Ok(None),
        };
        let Ok(server) = ServerInfo::from_discover(&answer) else {
            return Ok(None);
        };
        let mut session = self.lock();
        session.id = None;
        session.version = Some(server.protocol_version.clone());
        session.envelope = Some(envelope);
        session.generation += 1;
        Ok(Some(server))
    }

    /// The answer of a stateless server, which sends a JSON-RPC error with
    /// an HTTP error status (400, 404): read as the error it is.
    async fn read_stateless_answer(
        self: &Arc<Self>,
        id: i64,
        response: reqwest::Response,
    ) -> Result<Outcome, McpError> {
        let status = response.status();
        if status.is_success() || content_type(&response) != "application/json" {
            return self.read_answer(id, check_status(response).await?).await;
        }
        let body = read_bounded(response, self.max_message()).await?;
        match Message::parse(&body) {
            Ok(Message::Response(Response {
                outcome: Err(rpc), ..
            })) => Ok(Err(rpc)),
            _ => Err(McpError::Transport(format!(
                "the server answered HTTP {status}"
            ))),
        }
    }

    /// The `initialize` handshake: a fresh session, the negotiated version,
    /// then `notifications/initialized`.
    pub(super) async fn initialize(self: &Arc<Self>) -> Result<ServerInfo, McpError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": self.options.capabilities,
            "clientInfo": self.options.client_info,
        });
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Message::Request(Request {
            id: Id::Number(id),
            method: "initialize".into(),
            params: Some(params),
        });
        // The handshake is sent without the old session's headers.
        let response = self
            .send(Method::POST, Some(request.to_line()), false)
            .await?;
        let response = check_status(response).await?;
        let session_id = match response.headers().get(SESSION_ID) {
            None => None,
            Some(value) => Some(session_id(value)?),
        };
        let result = self
            .read_answer(id, response)
            .await?
            .map_err(McpError::Rpc)?;
        let server = ServerInfo::from_initialize(&result)?;
        {
            let mut session = self.lock();
            session.id = session_id;
            session.version = Some(server.protocol_version.clone());
            session.envelope = None;
            session.generation += 1;
        }
        self.notify("notifications/initialized", None).await?;
        Ok(server)
    }

    /// Sends a request and reads its answer within the request timeout;
    /// a cancelled `handle` stops the wait and tells the server.
    pub(super) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        handle: Option<&CallHandle>,
    ) -> Result<Value, McpError> {
        if handle.is_some_and(CallHandle::is_cancelled) {
            return Err(CallHandle::cancelled_error());
        }
        let Ok(_permit) = self.pending.clone().try_acquire_owned() else {
            return Err(McpError::Transport(format!(
                "more than {} requests are waiting for the server",
                self.options.max_pending
            )));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (params, routing) = match self.session().envelope {
            Some(envelope) => {
                let params = stamp(params, &envelope);
                let routing = routing(method, &params);
                (Some(params), routing)
            }
            None => (params, Vec::new()),
        };
        let line = Message::Request(Request {
            id: Id::Number(id),
            method: method.to_string(),
            params,
        })
        .to_line();
        let timeout = self.options.request_timeout;
        let exchange = tokio::time::timeout(timeout, self.exchange(id, line, &routing));
        let outcome = match handle {
            None => exchange.await,
            Some(handle) => tokio::select! {
                outcome = exchange => outcome,
                () = handle.cancelled() => {
                    self.tell_cancelled(id, handle.cancellation());
                    return Err(CallHandle::cancelled_error());
                }
            },
        };
        match outcome {
            Ok(answer) => answer?.map_err(McpError::Rpc),
            Err(_) => {
                self.tell_cancelled(id, Some(json!({"reason": "timeout"})));
                Err(McpError::Timeout(timeout))
            }
        }
    }

    /// POSTs a request and reads its answer; a session the server forgot
    /// (404) is set up again once and the request sent again.
    async fn exchange(
        self: &Arc<Self>,
        id: i64,
        line: Vec<u8>,
        routing: &Routing,
    ) -> Result<Outcome, McpError> {
        let before = self.session();
        if before.envelope.is_some() {
            let response = self
                .send_with(Method::POST, Some(line), true, None, routing)
                .await?;
            return self.read_stateless_answer(id, response).await;
        }
        let response = self.send(Method::POST, Some(line.clone()), true).await?;
        if response.status() != StatusCode::NOT_FOUND || before.id.is_none() {
            return self.read_answer(id, check_status(response).await?).await;
        }
        tracing::info!(target: "mcppol::mcp", url = %self.url, "the server's session expired; initializing again");
        self.renew(before.generation).await?;
        let response = self.send(Method::POST, Some(line), true).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(McpError::Transport(
                "the server's session expired, and again right after a new handshake".into(),
            ));
        }
        self.read_answer(id, check_status(response).await?).await
    }

    /// A new handshake, unless another request already made one since
    /// `generation`.
    async fn renew(self: &Arc<Self>, generation: u64) -> Result<(), McpError> {
        let _one_at_a_time = self.reinitialize.lock().await;
        if self.session().generation != generation {
            return Ok(());
        }
        self.initialize().await.map(drop)
    }

    /// POSTs a notification (or a response of the client's); the server
    /// answers 202 with no body.
    pub(super) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        // MCP 2026-07-28 over HTTP has no notification from the client: a
        // request is cancelled by closing its response stream.
        if self.session().envelope.is_some() {
            return Ok(());
        }
        let line = Message::Notification(Notification {
            method: method.to_string(),
            params,
        })
        .to_line();
        self.post_one_way(line).await
    }

    async fn post_one_way(&self, line: Vec<u8>) -> Result<(), McpError> {
        let response = self.send(Method::POST, Some(line), true).await?;
        check_status(response).await.map(drop)
    }

    /// Tells the server a request is no longer wanted, without waiting.
    fn tell_cancelled(self: &Arc<Self>, id: i64, params: Option<Value>) {
        let shared = self.clone();
        let params = cancelled_params(id, params);
        tokio::spawn(async move {
            let timeout = shared.options.request_timeout;
            let told = tokio::time::timeout(
                timeout,
                shared.notify("notifications/cancelled", Some(params)),
            );
            if let Ok(Err(e)) = told.await {
                tracing::debug!(target: "mcppol::mcp", error = %e, "telling the server of a cancellation failed");
            }
        });
    }

    /// Sends one HTTP request to the endpoint with the configured headers,
    /// the session's (unless `in_session` is false) and `body` as JSON.
    pub(super) async fn send(
        &self,
        method: Method,
        body: Option<Vec<u8>>,
        in_session: bool,
    ) -> Result<reqwest::Response, McpError> {
        self.send_with(method, body, in_session, None, &Vec::new())
            .await
    }

    /// As [`Shared::send`], with `Last-Event-ID` when resuming a stream
    /// and a stateless request's routing headers.
    pub(super) async fn send_with(
        &self,
        method: Method,
        body: Option<Vec<u8>>,
        in_session: bool,
        last_event_id: Option<&str>,
        routing: &Routing,
    ) -> Result<reqwest::Response, McpError> {
        let mut headers = self.headers.clone();
        let accept = if body.is_some() {
            "application/json, text/event-stream"
        } else {
            "text/event-stream"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if in_session {
            let session = self.session();
            if let Some(id) = session.id.and_then(|id| HeaderValue::from_str(&id).ok()) {
                headers.insert(SESSION_ID, id);
            }
            if let Some(v) = session.version.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(PROTOCOL_VERSION, v);
            }
        }
        if let Some(last) = last_event_id.and_then(|l| HeaderValue::from_str(l).ok()) {
            headers.insert("last-event-id", last);
        }
        for (name, value) in routing {
            headers.insert(*name, value.clone());
        }
        let mut request = self
            .client
            .request(method, self.url.clone())
            .headers(headers);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        request.send().await.map_err(|e| {
            McpError::Transport(format!("cannot reach {}: {}", self.url, describe(&e)))
        })
    }

    /// Reads the answer to request `id` from a successful response: one
    /// JSON message, or events until the answer (resumed with
    /// `Last-Event-ID` when the server closes the stream before it).
    async fn read_answer(
        self: &Arc<Self>,
        id: i64,
        response: reqwest::Response,
    ) -> Result<Outcome, McpError> {
        match content_type(&response).as_str() {
            "application/json" => {
                let body = read_bounded(response, self.max_message()).await?;
                match Message::parse(&body) {
                    Ok(Message::Response(Response {
                        id: Id::Number(n),
                        outcome,
                    })) if n == id => Ok(outcome),
                    Ok(_) => Err(McpError::Protocol(format!(
                        "the server's JSON answer to request {id} is not its response"
                    ))),
                    Err(e) => Err(McpError::Protocol(format!(
                        "the server's answer is not JSON-RPC: {e}"
                    ))),
                }
            }
            "text/event-stream" => {
                let mut response = response;
                for _ in 0..=MAX_RESUMES {
                    let mut events = Events::new(
                        response,
                        self.max_message(),
                        self.max_message().saturating_mul(RESPONSE_MESSAGES_BOUND),
                    );
                    if let Some(outcome) = self.read_events(&mut events, Some(id)).await? {
                        return Ok(outcome);
                    }
                    let Some(last) = events.last_id.clone() else {
                        break;
                    };
                    if let Some(ms) = events.retry {
                        let wait = std::time::Duration::from_millis(ms.min(10_000));
                        tokio::time::sleep(wait).await;
                    }
                    let resumed = self
                        .send_with(Method::GET, None, true, Some(&last), &Vec::new())
                        .await?;
                    response = check_status(resumed).await?;
                    if content_type(&response) != "text/event-stream" {
                        break;
                    }
                }
                Err(McpError::Transport(format!(
                    "the server's event stream ended before the answer to request {id}"
                )))
            }
            "" if response.status() == StatusCode::ACCEPTED => Err(McpError::Protocol(format!(
                "the server accepted request {id} (202) without answering it"
            ))),
            other => Err(McpError::Protocol(format!(
                "the server answered with content type `{}`, not JSON or an event stream",
                crate::escape::escape(crate::escape::cut_at(other, 64))
            ))),
        }
    }

    /// Reads events until the answer to `want` (returned) or the end of
    /// the stream (`None`): notifications go to the subscribers, the
    /// server's requests to the handler (its answer POSTed back), other
    /// responses are dropped.
    pub(super) async fn read_events(
        self: &Arc<Self>,
        events: &mut Events,
        want: Option<i64>,
    ) -> Result<Option<Outcome>, McpError> {
        while let Some(data) = events.next_data().await? {
            match Message::parse(data.as_bytes()) {
                Ok(Message::Response(Response { id, outcome })) => {
                    if matches!(id, Id::Number(n) if Some(n) == want) {
                        return Ok(Some(outcome));
                    }
                    tracing::debug!(target: "mcppol::mcp", %id, "a response to no pending request");
                }
                Ok(Message::Notification(n)) => {
                    let _ = self.notifications.send(n);
                }
                Ok(Message::Request(request)) => self.serve(request),
                Err(e) => {
                    // The event itself is not logged: it may carry results.
                    tracing::warn!(target: "mcppol::mcp", error = %e, "ignored an event that is not JSON-RPC");
                }
            }
        }
        Ok(None)
    }

    /// Answers one of the server's requests in its own task, through the
    /// handler; past [`MAX_SERVER_REQUESTS`] at once, with an error.
    fn serve(self: &Arc<Self>, request: Request) {
        let Request { id, method, params } = request;
        let permit = self.server_requests.clone().try_acquire_owned();
        let shared = self.clone();
        tokio::spawn(async move {
            let outcome = match permit {
                Ok(_permit) => shared.options.handler.handle(method, params).await,
                Err(_) => Err(RpcError::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "more than {MAX_SERVER_REQUESTS} of the server's requests are in flight"
                    ),
                )),
            };
            let line = Message::Response(Response { id, outcome }).to_line();
            let timeout = shared.options.request_timeout;
            match tokio::time::timeout(timeout, shared.post_one_way(line)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(target: "mcppol::mcp", error = %e, "answering the server's request failed")
                }
                Err(_) => {
                    tracing::warn!(target: "mcppol::mcp", "answering the server's request timed out")
                }
            }
        });
    }

    /// Asks the server to end the session (`DELETE`); nothing to do when
    /// it keeps none. A server that refuses (405) is fine.
    pub(super) async fn end_session(&self) {
        if self.session().id.is_none() {
            return;
        }
        if let Err(e) = self.send(Method::DELETE, None, true).await {
            tracing::debug!(target: "mcppol::mcp", error = %e, "ending the session failed");
        }
    }
}

/// The routing headers of a request to a stateless server (MCP 2026-07-28
/// "Transports"): its method, and the tool's or prompt's name or the
/// resource's URI, in the `=?base64?...?=` form when it is not plain
/// printable ASCII. The protocol version header is the session's.
fn routing(method: &str, params: &Value) -> Routing {
    let mut headers = Vec::new();
    if let Ok(value) = HeaderValue::from_str(method) {
        headers.push((METHOD, value));
    }
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return headers,
    };
    if let Some(name) = params.get(key).and_then(Value::as_str) {
        if let Ok(value) = HeaderValue::from_str(&super::header_value(name)) {
            headers.push((NAME, value));
        }
    }
    headers
}

/// The media type of a response, lower case, without parameters.
pub(super) fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// A session id as the specification allows it: visible ASCII, bounded.
fn session_id(value: &HeaderValue) -> Result<String, McpError> {
    let bytes = value.as_bytes();
    if bytes.is_empty()
        || bytes.len() > MAX_SESSION_ID_BYTES
        || !bytes.iter().all(|b| (0x21..=0x7e).contains(b))
    {
        return Err(McpError::Protocol(format!(
            "the server's `Mcp-Session-Id` is not 1 to {MAX_SESSION_ID_BYTES} visible ASCII characters"
        )));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// A successful response as it is; any other an error naming the status
/// (and, for a redirect not followed, where it pointed; for a JSON-RPC
/// error body, its message).
pub(super) async fn check_status(
    response: reqwest::Response,
) -> Result<reqwest::Response, McpError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    if status.is_redirection() {
        let to = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(|l| crate::escape::escape(crate::escape::cut_at(l, 200)))
            .unwrap_or_default();
        return Err(McpError::Transport(format!(
            "the server redirected ({status}) to `{to}`: mcppol follows redirects only within \
             the server's own origin (scheme, host and port), at most {} of them",
            super::MAX_REDIRECTS
        )));
    }
    // A JSON-RPC error in the body says why; it is the server's text.
    let detail = match read_bounded(response, 4096).await {
        Ok(body) => serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .map(|m| {
                format!(
                    ": {}",
                    crate::escape::escape(crate::escape::cut_at(&m, 200))
                )
            })
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    Err(McpError::Transport(format!(
        "the server answered HTTP {status}{detail}"
    )))
}
