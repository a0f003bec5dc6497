//! An in-memory transport and the scripted server behind it, for tests
//! and benchmarks: no process, no bytes, the same [`Transport`] API.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::jsonrpc::{codes, Notification, RpcError};
use super::transport::{BoxFuture, McpError, ServerInfo, Transport, PROTOCOL_VERSIONS};

/// What a scripted tool does with its arguments.
pub type ToolHandler =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, McpError>> + Send + Sync>;

/// The most requests a [`FakeServer`] remembers.
pub const MAX_RECORDED: usize = 10_000;

#[derive(Default)]
struct Script {
    tools: Vec<Value>,
    handlers: HashMap<String, ToolHandler>,
    resources: BTreeMap<String, Value>,
    prompts: BTreeMap<String, (Value, Value)>,
    page_size: usize,
    requests: Vec<(String, Option<Value>)>,
    list_error: Option<McpError>,
}

/// A scripted MCP server: tools with handlers, resources, prompts,
/// pagination, notifications, and a record of every request it got.
/// Clones share the script.
#[derive(Clone)]
pub struct FakeServer {
    script: Arc<Mutex<Script>>,
    notifications: broadcast::Sender<Notification>,
    info: ServerInfo,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Default for FakeServer {
    fn default() -> Self {
        FakeServer::new()
    }
}

/// A `CallToolResult` with one text block.
pub fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

impl FakeServer {
    /// A server with no tools, resources or prompts, speaking the newest
    /// protocol version, with `tools.listChanged` among its capabilities.
    pub fn new() -> Self {
        FakeServer {
            script: Arc::new(Mutex::new(Script::default())),
            notifications: broadcast::channel(64).0,
            info: ServerInfo {
                protocol_version: PROTOCOL_VERSIONS[0].to_string(),
                capabilities: json!({"tools": {"listChanged": true}, "resources": {}, "prompts": {}}),
                info: json!({"name": "fake", "version": "0"}),
                instructions: None,
            },
        }
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the instructions sent in the handshake.
    pub fn with_instructions(mut self, text: &str) -> Self {
        self.info.instructions = Some(text.to_string());
        self
    }

    /// Adds a tool (its `tools/list` entry) answering with `f(arguments)`.
    pub fn tool(
        self,
        definition: Value,
        f: impl Fn(Value) -> Result<Value, McpError> + Send + Sync + 'static,
    ) -> Self {
        let f = Arc::new(f);
        self.tool_async(definition, move |args| {
            let f = f.clone();
            async move { f(args) }
        })
    }

    /// Adds a tool answering with an async `f(arguments)`.
    pub fn tool_async<F, Fut>(self, definition: Value, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, McpError>> + Send + 'static,
    {
        let name = definition
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let handler: ToolHandler = Arc::new(move |args| Box::pin(f(args)));
        {
            let mut s = self.lock();
            // Only a name already there has an entry to replace (adding n
            // tools stays linear).
            if s.handlers.contains_key(&name) {
                s.tools.retain(|t| t.get("name") != definition.get("name"));
            }
            s.tools.push(definition);
            s.handlers.insert(name, handler);
        }
        self
    }

    /// Replaces a tool's definition (keeping its handler) and tells
    /// subscribers the list changed.
    pub fn redefine_tool(&self, definition: Value) {
        {
            let mut s = self.lock();
            for t in s.tools.iter_mut() {
                if t.get("name") == definition.get("name") {
                    *t = definition.clone();
                }
            }
        }
        self.notify("notifications/tools/list_changed", None);
    }

    /// Adds a resource answering `resources/read` with `contents`.
    pub fn resource(self, uri: &str, contents: Value) -> Self {
        self.lock().resources.insert(uri.to_string(), contents);
        self
    }

    /// Adds a prompt (its `prompts/list` entry) answering `prompts/get`
    /// with `result`.
    pub fn prompt(self, definition: Value, result: Value) -> Self {
        let name = definition
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.lock().prompts.insert(name, (definition, result));
        self
    }

    /// Lists in pages of `n` (0: one page).
    pub fn page_size(self, n: usize) -> Self {
        self.lock().page_size = n;
        self
    }

    /// Makes every listing fail with `error` (None: works again).
    pub fn fail_listings(&self, error: Option<McpError>) {
        self.lock().list_error = error;
    }

    /// Sends a notification to every subscriber.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        let _ = self.notifications.send(Notification {
            method: method.to_string(),
            params,
        });
    }

    /// Every request received so far (method and params), oldest first.
    pub fn requests(&self) -> Vec<(String, Option<Value>)> {
        self.lock().requests.clone()
    }

    /// The `tools/call` params received so far.
    pub fn calls(&self) -> Vec<Value> {
        self.lock()
            .requests
            .iter()
            .filter(|(m, _)| m == "tools/call")
            .filter_map(|(_, p)| p.clone())
            .collect()
    }

    fn page(
        &self,
        items: Vec<Value>,
        key: &str,
        params: &Option<Value>,
    ) -> Result<Value, McpError> {
        let size = self.lock().page_size;
        let start: usize = match params.as_ref().and_then(|p| p.get("cursor")) {
            None => 0,
            Some(c) => c
                .as_str()
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| McpError::Rpc(RpcError::new(codes::INVALID_PARAMS, "bad cursor")))?,
        };
        if size == 0 {
            return Ok(json!({ key: items }));
        }
        let end = (start + size).min(items.len());
        let page: Vec<Value> = items.get(start..end).unwrap_or_default().to_vec();
        let mut out = json!({ key: page });
        if end < items.len() {
            out["nextCursor"] = Value::from(end.to_string());
        }
        Ok(out)
    }

    async fn answer(&self, method: &str, params: Option<Value>) -> Result<Value, McpError> {
        {
            let mut s = self.lock();
            if s.requests.len() < MAX_RECORDED {
                s.requests.push((method.to_string(), params.clone()));
            }
        }
        let param = |key: &str| params.as_ref().and_then(|p| p.get(key)).cloned();
        match method {
            "ping" => Ok(json!({})),
            "tools/list" | "resources/list" | "prompts/list" => {
                let (items, key) = {
                    let s = self.lock();
                    if let Some(e) = &s.list_error {
                        return Err(e.clone());
                    }
                    match method {
                        "tools/list" => (s.tools.clone(), "tools"),
                        "resources/list" => (
                            s.resources
                                .keys()
                                .map(|u| json!({"uri": u, "name": u}))
                                .collect(),
                            "resources",
                        ),
                        _ => (
                            s.prompts.values().map(|(d, _)| d.clone()).collect(),
                            "prompts",
                        ),
                    }
                };
                self.page(items, key, &params)
            }
            "tools/call" => {
                let name = param("name").and_then(|n| n.as_str().map(String::from));
                let handler = name.and_then(|n| self.lock().handlers.get(&n).cloned());
                match handler {
                    Some(h) => h(param("arguments").unwrap_or(json!({}))).await,
                    None => Err(McpError::Rpc(RpcError::new(
                        codes::INVALID_PARAMS,
                        "unknown tool",
                    ))),
                }
            }
            "resources/read" => {
                let uri = param("uri");
                let found = uri
                    .as_ref()
                    .and_then(Value::as_str)
                    .and_then(|u| self.lock().resources.get(u).cloned());
                found.ok_or_else(|| McpError::Rpc(RpcError::new(-32002, "resource not found")))
            }
            "prompts/get" => {
                let name = param("name");
                let found = name
                    .as_ref()
                    .and_then(Value::as_str)
                    .and_then(|n| self.lock().prompts.get(n).map(|(_, r)| r.clone()));
                found.ok_or_else(|| {
                    McpError::Rpc(RpcError::new(codes::INVALID_PARAMS, "unknown prompt"))
                })
            }
            other => Err(McpError::Rpc(RpcError::method_not_found(other))),
        }
    }
}

/// A [`Transport`] straight into a [`FakeServer`].
#[derive(Debug, Clone)]
pub struct MemoryTransport {
    server: FakeServer,
}

impl MemoryTransport {
    /// A transport to `server` (already "connected": there is no handshake
    /// to run).
    pub fn new(server: FakeServer) -> Self {
        MemoryTransport { server }
    }

    /// The scripted server behind this transport.
    pub fn fake(&self) -> &FakeServer {
        &self.server
    }
}

impl Transport for MemoryTransport {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.server.answer(method, params))
    }

    fn notify<'a>(
        &'a self,
        _method: &'a str,
        _params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async { Ok(()) })
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.server.notifications.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        &self.server.info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scripted_tools_pages_resources_and_prompts() {
        let fake = FakeServer::new()
            .page_size(2)
            .tool(json!({"name": "a"}), |_| Ok(text_result("A")))
            .tool(json!({"name": "b"}), |args| {
                Ok(text_result(&args.to_string()))
            })
            .tool(json!({"name": "c"}), |_| Ok(text_result("C")))
            .resource(
                "file:///x",
                json!({"contents": [{"uri": "file:///x", "text": "x"}]}),
            )
            .prompt(json!({"name": "p"}), json!({"messages": []}));
        let t = MemoryTransport::new(fake.clone());
        let first = t.list_tools(None).await.unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.next_cursor.as_deref(), Some("2"));
        assert_eq!(t.list_all_tools().await.unwrap().len(), 3);
        let r = t.call_tool("b", json!({"k": 1}), None).await.unwrap();
        assert_eq!(r["content"][0]["text"], "{\"k\":1}");
        assert!(matches!(
            t.call_tool("zz", json!({}), None).await,
            Err(McpError::Rpc(_))
        ));
        assert_eq!(
            t.read_resource("file:///x").await.unwrap()["contents"][0]["text"],
            "x"
        );
        assert!(t.get_prompt("p", None).await.is_ok());
        assert_eq!(t.list_all_resources().await.unwrap().len(), 1);
        assert_eq!(t.list_all_prompts().await.unwrap().len(), 1);
        assert_eq!(fake.calls().len(), 2);
        let mut rx = t.subscribe();
        fake.redefine_tool(json!({"name": "a", "description": "new"}));
        assert_eq!(
            rx.recv().await.unwrap().method,
            "notifications/tools/list_changed"
        );
        assert_eq!(t.list_all_tools().await.unwrap()[0]["description"], "new");
    }
}
