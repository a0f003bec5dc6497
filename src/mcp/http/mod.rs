//! A remote MCP server over streamable HTTP (protocol versions 2025-06-18
//! and 2025-11-25, and 2026-07-28 when offered and the server answers
//! `server/discover`): each message is a POST to the server's one endpoint;
//! the answer to a request comes back as one JSON body or as a stream of
//! server-sent events that may carry the server's notifications and
//! requests before it; the server's own stream (a GET) carries what it
//! sends outside any request. [`HttpTransport`] implements [`Transport`],
//! so the pipeline, the gateway and `mcppol tools` use a remote server
//! exactly as a stdio one.

mod body;
mod listen;
mod session;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use super::connection::ConnectOptions;
use super::handle::CallHandle;
use super::jsonrpc::Notification;
use super::transport::{BoxFuture, McpError, ServerInfo, Transport};
use session::Shared;

pub(crate) use body::read_bounded;

/// The most redirects followed, each to the same origin as the endpoint.
pub const MAX_REDIRECTS: usize = 5;

/// How many times the largest message (`ConnectOptions::max_line_bytes`)
/// one response may carry in all (an SSE stream with notifications before
/// its answer).
pub const RESPONSE_MESSAGES_BOUND: usize = 4;

/// How long `close` (and a drop) waits for the server to end the session.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// A connected remote server. Dropping it stops its event stream and asks
/// the server to end the session (`DELETE`) without waiting;
/// [`HttpTransport::close`] waits for that.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use mcppol::mcp::{ConnectOptions, HttpTransport, Transport};
///
/// # async fn run() -> Result<(), mcppol::mcp::McpError> {
/// let headers = BTreeMap::from([("Authorization".to_string(), "Bearer t0ken".to_string())]);
/// let server =
///     HttpTransport::connect("https://mcp.example.com/mcp", &headers, ConnectOptions::default())
///         .await?;
/// println!("{} tools", server.list_all_tools().await?.len());
/// server.close().await;
/// # Ok(())
/// # }
/// ```
pub struct HttpTransport {
    shared: Arc<Shared>,
    server: ServerInfo,
    listener: Option<AbortHandle>,
    closed: bool,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The headers are left out: they carry credentials.
        f.debug_struct("HttpTransport")
            .field("url", &self.shared.url.as_str())
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// Runs the `initialize` handshake with the server at `url`, sending
    /// `headers` with every request, then opens the server's own event
    /// stream where it offers one. With
    /// [`ConnectOptions::offer_stateless`], `server/discover` first: a
    /// server that answers it is spoken to in MCP 2026-07-28 (no session,
    /// no stream of its own; every request with its `_meta` envelope and
    /// the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers).
    ///
    /// # Errors
    ///
    /// [`McpError::Transport`] for a URL or a header that is not valid, a
    /// server that cannot be reached or answers an HTTP error (named), a
    /// redirect to another origin; the handshake's errors as the stdio
    /// transport's (a protocol version this client does not speak, no
    /// answer within `options.request_timeout`).
    pub async fn connect(
        url: &str,
        headers: &BTreeMap<String, String>,
        options: ConnectOptions,
    ) -> Result<HttpTransport, McpError> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| McpError::Transport(format!("`{url}` is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(McpError::Transport(format!(
                "`{url}`: a remote server's URL starts with http:// or https://"
            )));
        }
        let headers = header_map(headers)?;
        let client = client(&options)?;
        let (notifications, _) = broadcast::channel(256);
        let shared = Arc::new(Shared::new(client, url, headers, options, notifications));
        let server = tokio::time::timeout(shared.options.request_timeout, shared.handshake())
            .await
            .map_err(|_| McpError::Timeout(shared.options.request_timeout))??;
        // A stateless server has no stream of its own (2026-07-28).
        let listener = (!server.is_stateless())
            .then(|| tokio::spawn(listen::listen(Arc::downgrade(&shared))).abort_handle());
        Ok(HttpTransport {
            shared,
            server,
            listener,
            closed: false,
        })
    }

    /// The session id the server gave, if it keeps sessions.
    pub fn session_id(&self) -> Option<String> {
        self.shared.session().id
    }

    /// Stops the server's event stream and ends the session (`DELETE`,
    /// waited for up to two seconds; a server that does not allow it is
    /// fine).
    pub async fn close(mut self) {
        self.closed = true;
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.shared.end_session()).await;
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if self.closed {
            return;
        }
        // Without a runtime (dropped after it), the session simply expires
        // on the server.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = self.shared.clone();
            runtime.spawn(async move {
                let _ = tokio::time::timeout(CLOSE_TIMEOUT, shared.end_session()).await;
            });
        }
    }
}

impl Transport for HttpTransport {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.shared.request(method, params, None))
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.shared.request(method, params, Some(handle)))
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async move {
            let timeout = self.shared.options.request_timeout;
            tokio::time::timeout(timeout, self.shared.notify(method, params))
                .await
                .map_err(|_| McpError::Timeout(timeout))?
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.shared.notifications.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        &self.server
    }
}

/// The configured headers, checked: a name or a value HTTP cannot carry
/// is an error naming the header (never its value: it may be a token).
fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, McpError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            McpError::Transport(format!(
                "`{}` is not an HTTP header name",
                crate::escape::escape(name)
            ))
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            McpError::Transport(format!(
                "the value of header `{name}` has characters HTTP cannot carry"
            ))
        })?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    Ok(map)
}

/// The HTTP client: redirects followed only within the endpoint's origin,
/// connecting bounded by the request timeout.
fn client(options: &ConnectOptions) -> Result<reqwest::Client, McpError> {
    let same_origin = reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.stop();
        };
        if attempt.previous().len() > MAX_REDIRECTS || attempt.url().origin() != first.origin() {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .redirect(same_origin)
        .connect_timeout(options.request_timeout.min(Duration::from_secs(30)))
        .user_agent(concat!("mcppol/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| McpError::Transport(format!("cannot set up the HTTP client: {e}")))
}

/// A reqwest error in words, with its cause (reqwest's own message is
/// often just "error sending request").
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A header value that carries `value`: as it is when it is printable
/// ASCII without blanks at its edges, else in the `=?base64?...?=` form MCP
/// 2026-07-28 gives any other value.
pub(crate) fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b)) && value.trim() == value;
    if plain {
        value.to_string()
    } else {
        format!("=?base64?{}?=", base64(value.as_bytes()))
    }
}

/// Standard base64 with padding (RFC 4648 section 4).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The params of `notifications/cancelled` for request `id`.
fn cancelled_params(id: i64, params: Option<Value>) -> Value {
    let mut params = match params {
        Some(p @ Value::Object(_)) => p,
        _ => json!({}),
    };
    params["requestId"] = Value::from(id);
    params
}

#[cfg(test)]
mod stateless_tests;
#[cfg(test)]
mod tests;
