//! A server's connection (a child's, or a remote server's over streamable
//! HTTP through `mcp::connect`) as its pipeline's transport, keeping each
//! `tools/call` result as the server sent it on the call's handle (as the
//! proxy's upstream does): the host then gets it with every key in place,
//! where the pipeline's `ToolResult` keeps only the keys it knows.
//!
//! For a stateless (2026-07-28) server it also translates: a result loses
//! the keys only that version has (the gateway writes its own for a
//! stateless host), and an `input_required` answer is settled here, inside
//! the one governed request (`server_input.rs`).

use std::sync::Weak;

use serde_json::Value;
use tokio::sync::broadcast;

use super::server_input;
use super::Shared;
use crate::mcp::{
    BoxFuture, CallHandle, Connection, McpError, Notification, ServerInfo, Transport,
};

/// A connection that keeps raw `tools/call` results.
pub(crate) struct Kept {
    conn: Conn,
    /// The gateway, to ask the host for a stateless server's input.
    gw: Weak<Shared>,
    /// The server's id.
    server: String,
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
    pub(crate) fn new(conn: Connection, gw: Weak<Shared>, server: &str) -> Kept {
        Kept {
            conn: Conn::Local(conn),
            gw,
            server: server.to_string(),
        }
    }

    /// A remote server's connection.
    #[cfg(feature = "http")]
    pub(crate) fn remote(
        conn: crate::mcp::ServerConnection,
        gw: Weak<Shared>,
        server: &str,
    ) -> Kept {
        Kept {
            conn: Conn::Remote(conn),
            gw,
            server: server.to_string(),
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

    /// Sends a request; a stateless server's result translated, its
    /// `input_required` answers settled with the host and the request sent
    /// again (at most [`server_input::MAX_INPUT_ROUNDS`] times).
    async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        handle: Option<&CallHandle>,
    ) -> Result<Value, McpError> {
        let once = |params: Option<Value>| async move {
            match handle {
                Some(h) => self.inner().request_with(method, params, h).await,
                None => self.inner().request(method, params).await,
            }
        };
        if !self.inner().server().is_stateless() {
            return once(params).await;
        }
        if !server_input::may_ask(method) {
            let mut result = once(params).await?;
            server_input::translate(&mut result);
            return Ok(result);
        }
        // Kept for a retry: the server may ask for input first.
        let mut result = once(params.clone()).await?;
        {
            let mut params = params;
            for _ in 0..server_input::MAX_INPUT_ROUNDS {
                if !server_input::is_input_required(&result) {
                    break;
                }
                let Some(gw) = self.gw.upgrade() else {
                    return Err(McpError::Transport("the gateway is stopping".into()));
                };
                let wait = gw.call_timeout;
                let retry = server_input::answer_round(
                    &gw,
                    &self.server,
                    params.as_ref(),
                    &result,
                    handle,
                    wait,
                )
                .await?;
                params = Some(retry);
                result = once(params.clone()).await?;
            }
            if server_input::is_input_required(&result) {
                return Err(McpError::Protocol(format!(
                    "the server asked for input more than {} times in one request",
                    server_input::MAX_INPUT_ROUNDS
                )));
            }
        }
        server_input::translate(&mut result);
        Ok(result)
    }
}

impl Transport for Kept {
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
        self.inner().notify(method, params)
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.inner().subscribe()
    }

    fn server(&self) -> &ServerInfo {
        self.inner().server()
    }
}
