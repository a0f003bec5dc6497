//! A server's connection (a child's, or a remote server's over streamable
//! HTTP through `mcp::connect`) as its pipeline's transport, keeping each
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
    conn: Conn,
}

// One per server, made once per start: the size of the larger variant
// costs nothing.
#[allow(clippy::large_enum_variant)]
enum Conn {
    /// A child's pipes (the child itself is the supervisor's).
    Local(Connection),
    /// A remote server.
    #[cfg(feature = "http")]
    Remote(crate::mcp::ServerConnection),
}

impl Kept {
    pub(crate) fn new(conn: Connection) -> Kept {
        Kept {
            conn: Conn::Local(conn),
        }
    }

    /// A remote server's connection.
    #[cfg(feature = "http")]
    pub(crate) fn remote(conn: crate::mcp::ServerConnection) -> Kept {
        Kept {
            conn: Conn::Remote(conn),
        }
    }

    fn inner(&self) -> &dyn Transport {
        match &self.conn {
            Conn::Local(c) => c,
            #[cfg(feature = "http")]
            Conn::Remote(c) => c,
        }
    }

    /// Whether a child's connection has closed, and why (a remote one
    /// fails each request instead, and renews its session itself).
    pub(crate) fn closed(&self) -> Option<McpError> {
        match &self.conn {
            Conn::Local(c) => c.closed(),
            #[cfg(feature = "http")]
            Conn::Remote(_) => None,
        }
    }

    /// Ends a remote session (`DELETE`), within `grace`; a child's
    /// connection just closes.
    pub(crate) async fn shutdown(self, grace: std::time::Duration) {
        #[cfg(not(feature = "http"))]
        let _ = grace;
        match self.conn {
            Conn::Local(c) => drop(c),
            #[cfg(feature = "http")]
            Conn::Remote(c) => {
                let _ = c.shutdown(grace).await;
            }
        }
    }
}

impl Transport for Kept {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        self.inner().request(method, params)
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move {
            let result = self.inner().request_with(method, params, handle).await?;
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
        self.inner().notify(method, params)
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.inner().subscribe()
    }

    fn server(&self) -> &ServerInfo {
        self.inner().server()
    }
}
