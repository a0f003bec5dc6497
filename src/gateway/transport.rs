//! A server's connection as its pipeline's transport, keeping each
//! `tools/call` result as the server sent it on the call's handle (as the
//! proxy's upstream does): the host then gets it with every key in place,
//! where the pipeline's `ToolResult` keeps only the keys it knows.

use serde_json::Value;
use tokio::sync::broadcast;

use crate::mcp::{
    BoxFuture, CallHandle, Connection, McpError, Notification, ServerInfo, Transport,
};

/// A connection that keeps raw `tools/call` results.
pub(crate) struct Kept {
    conn: Connection,
}

impl Kept {
    pub(crate) fn new(conn: Connection) -> Kept {
        Kept { conn }
    }

    /// Whether the connection has closed, and why.
    pub(crate) fn closed(&self) -> Option<McpError> {
        self.conn.closed()
    }
}

impl Transport for Kept {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        self.conn.request(method, params)
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let result = self.conn.request_with(method, params, handle).await?;
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
        self.conn.notify(method, params)
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.conn.subscribe()
    }

    fn server(&self) -> &ServerInfo {
        self.conn.server()
    }
}
