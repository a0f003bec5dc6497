//! The server as the pipeline sees it: a [`Transport`] over the server
//! side of the wire. The host runs the handshake through the proxy; what
//! the server answered is recorded here for the pipeline.
//!
//! A governed request's [`CallHandle`] comes down with each send
//! ([`Transport::request_with`]): the host's cancellation reaches the
//! request the server got through it, whichever task sent it (an around
//! hook runs on a task of its own), and a `tools/call` result is kept on
//! it as the server sent it, so the host gets it with every key in place
//! (the pipeline's `ToolResult` keeps the keys it knows, in its order).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::mcp::peer::{Peer, Wait};
use crate::mcp::{BoxFuture, CallHandle, McpError, Notification, ServerInfo, Transport};

/// The server side as a transport.
pub(crate) struct Upstream {
    pub(crate) peer: Arc<Peer>,
    info: OnceLock<ServerInfo>,
    unknown: ServerInfo,
    pub(crate) notes: broadcast::Sender<Notification>,
    timeout: Duration,
}

impl Upstream {
    pub(crate) fn new(peer: Arc<Peer>, timeout: Duration) -> Upstream {
        Upstream {
            peer,
            info: OnceLock::new(),
            unknown: ServerInfo::default(),
            notes: broadcast::channel(256).0,
            timeout,
        }
    }

    /// Sends the server a request for the host request `handle` serves
    /// and waits at most the call timeout for the answer. Past it the
    /// server is told, if the request reached its queue and the queue has
    /// room (never waited for: a server that reads nothing would hold the
    /// answer up), and the request fails with [`McpError::Timeout`].
    pub(crate) async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        handle: Option<&CallHandle>,
    ) -> Result<Value, McpError> {
        let wait = Wait::within(self.timeout, handle);
        self.peer.request(method, params, wait).await
    }

    /// Records the server's answer to `initialize`. Unlike a client of its
    /// own, the proxy refuses no protocol version: what the host and the
    /// server agreed on is theirs, and what a newer version adds passes
    /// through.
    pub(crate) fn initialized(&self, result: &Value) {
        let info = ServerInfo::from_initialize(result).unwrap_or_else(|_| ServerInfo {
            protocol_version: result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            info: result.get("serverInfo").cloned().unwrap_or(json!({})),
            instructions: None,
        });
        let _ = self.info.set(info);
    }
}

impl Transport for Upstream {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(self.send(method, params, None))
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let result = self.send(method, params, Some(handle)).await?;
            if method == "tools/call" {
                handle.keep(result.clone());
            }
            Ok(result)
        })
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async move {
            self.peer.notify(method, params).await;
            Ok(())
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.notes.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        self.info.get().unwrap_or(&self.unknown)
    }
}
