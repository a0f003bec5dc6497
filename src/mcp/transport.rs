//! The [`Transport`] trait: what the pipeline (and the proxy) needs from a
//! connection to one MCP server, whatever carries it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use super::handle::CallHandle;
use super::jsonrpc::{Notification, RpcError};

/// A boxed future that can cross threads (keeps [`Transport`] usable as
/// `dyn Transport`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The protocol versions this client speaks, newest first. The client
/// offers the first; the server's answer must be one of these.
pub const PROTOCOL_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The stateless protocol versions (MCP 2026-07-28 and later): no
/// `initialize` handshake and no session; each request carries its
/// version and the client's capabilities in `_meta`
/// ([`META_PROTOCOL_VERSION`], [`META_CLIENT_CAPABILITIES`]), and a server
/// describes itself in answer to `server/discover`. Kept apart from
/// [`PROTOCOL_VERSIONS`], which are the versions an `initialize` may
/// negotiate: no handshake ever agrees on one of these.
pub const STATELESS_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The `_meta` key of a stateless request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key of a stateless request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key of a stateless request's client description
/// (`clientInfo`; optional in 2026-07-28, sent by this client).
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The `_meta` key of the server's own description in a 2026-07-28 result.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The error code of a protocol version the other side does not speak
/// (2026-07-28), whose `data.supported` lists those it does.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The longest a client waits for the answer to its `server/discover`
/// probe (bounded further by the request timeout) before it falls back to
/// `initialize`.
pub const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// The most pages a `list_all_*` call follows.
pub const MAX_PAGES: usize = 100;
/// The most items a `list_all_*` call gathers.
pub const MAX_LIST_ITEMS: usize = 10_000;

/// Why a request got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The server broke the protocol (a bad message, a line over the
    /// bound, an unsupported protocol version, a result of the wrong shape).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The connection failed or closed (the server exited, a pipe broke).
    #[error("transport failed: {0}")]
    Transport(String),
    /// No answer in time.
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
}

/// What the server said about itself in the `initialize` handshake.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerInfo {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's `capabilities` object (`{}` when it sent none).
    pub capabilities: Value,
    /// `serverInfo`: name, version, ...
    pub info: Value,
    /// Instructions for the model, as the server sent them (untrusted: see
    /// [`shape_instructions`](crate::pipeline::shape_instructions) and
    /// [`Pipeline::instructions`](crate::pipeline::Pipeline::instructions)
    /// before showing them to a model).
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// Reads an `initialize` result, checking the protocol version.
    ///
    /// # Errors
    ///
    /// [`McpError::Protocol`] when `protocolVersion` is missing or is not
    /// one of [`PROTOCOL_VERSIONS`].
    pub fn from_initialize(result: &Value) -> Result<ServerInfo, McpError> {
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Protocol("initialize: no `protocolVersion`".into()))?;
        if !PROTOCOL_VERSIONS.contains(&version) {
            return Err(McpError::Protocol(format!(
                "the server speaks protocol version {version:?}; this client speaks {}",
                PROTOCOL_VERSIONS.join(" and ")
            )));
        }
        Ok(ServerInfo {
            protocol_version: version.to_string(),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            info: result.get("serverInfo").cloned().unwrap_or(json!({})),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(String::from),
        })
    }
}

impl ServerInfo {
    /// Reads a `server/discover` result (MCP 2026-07-28): the server is
    /// spoken to without a session in the newest stateless version both
    /// sides speak.
    ///
    /// # Errors
    ///
    /// [`McpError::Protocol`] when `supportedVersions` names none of
    /// [`STATELESS_PROTOCOL_VERSIONS`] (a server that answers discover but
    /// offers only handshake versions is reached with `initialize`).
    pub fn from_discover(result: &Value) -> Result<ServerInfo, McpError> {
        let supported: Vec<&str> = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|all| all.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(version) = STATELESS_PROTOCOL_VERSIONS
            .iter()
            .find(|v| supported.contains(v))
        else {
            return Err(McpError::Protocol(format!(
                "server/discover offers no protocol version this client speaks without a session ({})",
                STATELESS_PROTOCOL_VERSIONS.join(", ")
            )));
        };
        let info = result
            .get("_meta")
            .and_then(|m| m.get(META_SERVER_INFO))
            .or_else(|| result.get("serverInfo"))
            .filter(|i| i.is_object())
            .cloned()
            .unwrap_or(json!({}));
        Ok(ServerInfo {
            protocol_version: (*version).to_string(),
            capabilities: result
                .get("capabilities")
                .filter(|c| c.is_object())
                .cloned()
                .unwrap_or(json!({})),
            info,
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(String::from),
        })
    }

    /// Whether the server is spoken to without a session (MCP 2026-07-28:
    /// each request carries the `_meta` envelope).
    pub fn is_stateless(&self) -> bool {
        STATELESS_PROTOCOL_VERSIONS.contains(&self.protocol_version.as_str())
    }
}

/// The `_meta` envelope every request to a stateless server carries: the
/// protocol version, the client's capabilities and its description.
pub(crate) fn envelope(version: &str, capabilities: &Value, client_info: &Value) -> Value {
    json!({
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: capabilities,
        META_CLIENT_INFO: client_info,
    })
}

/// `params` with the envelope's keys added to its `_meta`; a key the
/// request already carries is kept (a caller may send its own host's
/// capabilities for this one request).
pub(crate) fn stamp(params: Option<Value>, envelope: &Value) -> Value {
    let mut params = match params {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let (Value::Object(meta), Value::Object(keys)) = (meta, envelope) {
        for (k, v) in keys {
            meta.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Value::Object(params)
}

/// What a failed `server/discover` probe means: `Ok` to fall back to
/// `initialize` (the server does not know discover: method not found, an
/// error of the 2025 protocol, no answer in time), an error only for a
/// server that names the versions it speaks and none is this client's.
pub(crate) fn probe_failed(e: McpError) -> Result<(), McpError> {
    let McpError::Rpc(rpc) = &e else {
        return Ok(());
    };
    if rpc.code != UNSUPPORTED_PROTOCOL_VERSION {
        return Ok(());
    }
    let supported: Vec<&str> = rpc
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|all| all.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let speaks_any = supported
        .iter()
        .any(|v| PROTOCOL_VERSIONS.contains(v) || STATELESS_PROTOCOL_VERSIONS.contains(v));
    if supported.is_empty() || speaks_any {
        return Ok(());
    }
    Err(McpError::Protocol(format!(
        "the server speaks protocol versions {}; this client speaks {} and {}",
        supported.join(", "),
        STATELESS_PROTOCOL_VERSIONS.join(", "),
        PROTOCOL_VERSIONS.join(" and ")
    )))
}

/// Whether an `initialize` error says the server has settled on the
/// stateless protocol (a probe it answered after this client stopped
/// waiting): then one more probe is worth it.
pub(crate) fn initialize_refused_as_stateless(e: &McpError) -> bool {
    matches!(e, McpError::Rpc(rpc) if rpc.code == UNSUPPORTED_PROTOCOL_VERSION
        && rpc.data.as_ref().and_then(|d| d.get("supported")).and_then(Value::as_array)
            .is_some_and(|all| all.iter().filter_map(Value::as_str).any(|v| STATELESS_PROTOCOL_VERSIONS.contains(&v))))
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    /// The page's items (tools, resources or prompts), as the server sent
    /// them.
    pub items: Vec<Value>,
    /// The cursor of the next page; `None` on the last one.
    pub next_cursor: Option<String>,
}

/// Answers the requests a server sends to the client (`ping`,
/// `roots/list`, `sampling/createMessage`, `elicitation/create`, ...).
/// Set it in [`ConnectOptions::handler`](super::ConnectOptions::handler);
/// the default, [`DefaultHandler`], answers `ping` only.
///
/// ```
/// use mcppol::mcp::{BoxFuture, RequestHandler, RpcError};
/// use serde_json::{json, Value};
///
/// /// Tells the server which folders the client works in.
/// struct Roots;
///
/// impl RequestHandler for Roots {
///     fn handle(&self, method: String, _params: Option<Value>)
///         -> BoxFuture<'static, Result<Value, RpcError>>
///     {
///         Box::pin(async move {
///             match method.as_str() {
///                 "ping" => Ok(json!({})),
///                 "roots/list" => Ok(json!({"roots": [{"uri": "file:///srv/work"}]})),
///                 _ => Err(RpcError::method_not_found(&method)),
///             }
///         })
///     }
/// }
/// ```
pub trait RequestHandler: Send + Sync + 'static {
    /// Answers one request: `method` and its `params`, a result or an
    /// error for the server. It runs in its own task; a slow answer does
    /// not hold up the connection.
    fn handle(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>>;
}

/// Answers `ping` and refuses everything else with "method not found".
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultHandler;

impl RequestHandler for DefaultHandler {
    fn handle(
        &self,
        method: String,
        _params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        Box::pin(async move {
            if method == "ping" {
                Ok(json!({}))
            } else {
                Err(RpcError::method_not_found(&method))
            }
        })
    }
}

/// A connection to one MCP server: what the [`Pipeline`](crate::pipeline::Pipeline)
/// (and the proxy) needs, whatever carries the messages.
///
/// Implementors provide [`Transport::request`], [`Transport::notify`],
/// [`Transport::subscribe`] and [`Transport::server`]; the MCP methods are
/// built on them. The crate has [`StdioTransport`](super::StdioTransport)
/// (a child process) and [`Connection`](super::Connection) (any pair of
/// byte streams); with the feature `http`, `HttpTransport` (a remote server
/// over streamable HTTP); with the feature `test-util`, `MemoryTransport`
/// (a scripted server, for tests), which the example below uses.
///
/// # Errors
///
/// Every request ends in an [`McpError`]: the server's own JSON-RPC error
/// ([`McpError::Rpc`]), a broken protocol, a failed connection, or no
/// answer in time. Listings are bounded ([`MAX_PAGES`], [`MAX_LIST_ITEMS`]).
///
/// ```
/// use mcppol::mcp::{text_result, FakeServer, MemoryTransport, Transport};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let server = FakeServer::new()
///     .tool(json!({"name": "echo"}), |args| Ok(text_result(&args["text"].to_string())));
/// let transport = MemoryTransport::new(server);
///
/// let tools = transport.list_all_tools().await?;
/// assert_eq!(tools[0]["name"], "echo");
/// let result = transport.call_tool("echo", json!({"text": "hi"}), None).await?;
/// assert_eq!(result["content"][0]["text"], "\"hi\"");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Transport: Send + Sync {
    /// Sends a request and waits for its result.
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>>;

    /// Sends a request for a call whose `handle` may cancel it: once the
    /// handle is cancelled the request fails without waiting for its
    /// answer, and one made afterwards is not sent. The crate's own
    /// transports over a [`Connection`](super::Connection) also tell the
    /// server (`notifications/cancelled` under the request's id); this
    /// default, for any other transport, only stops waiting.
    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            if handle.is_cancelled() {
                return Err(CallHandle::cancelled_error());
            }
            tokio::select! {
                outcome = self.request(method, params) => outcome,
                () = handle.cancelled() => Err(CallHandle::cancelled_error()),
            }
        })
    }

    /// Sends a notification.
    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>>;

    /// The notifications the server sends from now on
    /// (`notifications/tools/list_changed`, progress, logging, ...).
    fn subscribe(&self) -> broadcast::Receiver<Notification>;

    /// What the server said in the handshake.
    fn server(&self) -> &ServerInfo;

    /// One page of `tools/list` (`cursor`: where the previous page ended).
    ///
    /// # Errors
    ///
    /// The request's own errors, and [`McpError::Protocol`] when the
    /// result has no `tools` list or a `nextCursor` that is not a string.
    fn list_tools<'a>(&'a self, cursor: Option<&'a str>) -> BoxFuture<'a, Result<Page, McpError>> {
        Box::pin(list_page(self, "tools/list", "tools", cursor))
    }

    /// Every tool, following `nextCursor` (bounded by [`MAX_PAGES`] and
    /// [`MAX_LIST_ITEMS`]).
    fn list_all_tools(&self) -> BoxFuture<'_, Result<Vec<Value>, McpError>> {
        Box::pin(list_all(self, "tools/list", "tools"))
    }

    /// One page of `resources/list`, as [`Transport::list_tools`].
    fn list_resources<'a>(
        &'a self,
        cursor: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Page, McpError>> {
        Box::pin(list_page(self, "resources/list", "resources", cursor))
    }

    /// Every resource, as [`Transport::list_all_tools`].
    fn list_all_resources(&self) -> BoxFuture<'_, Result<Vec<Value>, McpError>> {
        Box::pin(list_all(self, "resources/list", "resources"))
    }

    /// One page of `prompts/list`, as [`Transport::list_tools`].
    fn list_prompts<'a>(
        &'a self,
        cursor: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Page, McpError>> {
        Box::pin(list_page(self, "prompts/list", "prompts", cursor))
    }

    /// Every prompt, as [`Transport::list_all_tools`].
    fn list_all_prompts(&self) -> BoxFuture<'_, Result<Vec<Value>, McpError>> {
        Box::pin(list_all(self, "prompts/list", "prompts"))
    }

    /// `tools/call`; `meta` becomes the request's `_meta`. The result is the
    /// raw `CallToolResult` object.
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        meta: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let mut params = Map::new();
            params.insert("name".into(), Value::from(name));
            params.insert("arguments".into(), arguments);
            if let Some(meta) = meta {
                params.insert("_meta".into(), meta);
            }
            let result = self
                .request("tools/call", Some(Value::Object(params)))
                .await?;
            expect_object(result, "tools/call")
        })
    }

    /// `resources/read`.
    fn read_resource<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let result = self
                .request("resources/read", Some(json!({ "uri": uri })))
                .await?;
            expect_object(result, "resources/read")
        })
    }

    /// `prompts/get`.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let mut params = Map::new();
            params.insert("name".into(), Value::from(name));
            if let Some(args) = arguments {
                params.insert("arguments".into(), args);
            }
            let result = self
                .request("prompts/get", Some(Value::Object(params)))
                .await?;
            expect_object(result, "prompts/get")
        })
    }
}

fn expect_object(result: Value, method: &str) -> Result<Value, McpError> {
    if result.is_object() {
        Ok(result)
    } else {
        Err(McpError::Protocol(format!(
            "the result of {method} is not an object"
        )))
    }
}

async fn list_page<T: Transport + ?Sized>(
    t: &T,
    method: &str,
    key: &str,
    cursor: Option<&str>,
) -> Result<Page, McpError> {
    let params = cursor.map(|c| json!({ "cursor": c }));
    let result = t.request(method, params).await?;
    let Value::Object(mut obj) = result else {
        return Err(McpError::Protocol(format!(
            "the result of {method} is not an object"
        )));
    };
    let items = match obj.remove(key) {
        Some(Value::Array(items)) => items,
        _ => {
            return Err(McpError::Protocol(format!(
                "the result of {method} has no `{key}` list"
            )))
        }
    };
    let next_cursor = match obj.remove("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => {
            return Err(McpError::Protocol(format!(
                "the `nextCursor` of {method} is not a string"
            )))
        }
    };
    Ok(Page { items, next_cursor })
}

async fn list_all<T: Transport + ?Sized>(
    t: &T,
    method: &str,
    key: &str,
) -> Result<Vec<Value>, McpError> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let page = list_page(t, method, key, cursor.as_deref()).await?;
        all.extend(page.items);
        if all.len() > MAX_LIST_ITEMS {
            return Err(McpError::Protocol(format!(
                "{method} lists more than {MAX_LIST_ITEMS} items"
            )));
        }
        match page.next_cursor {
            None => return Ok(all),
            Some(next) if Some(&next) == cursor.as_ref() => {
                return Err(McpError::Protocol(format!(
                    "{method} returned the same cursor twice"
                )))
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(McpError::Protocol(format!(
        "{method} has more than {MAX_PAGES} pages"
    )))
}
