//! An MCP server run as a child process, spoken to over its stdin and
//! stdout (newline-delimited JSON-RPC). The child's stderr is left as the
//! caller set it on the command.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::BufReader;
use tokio::process::{Child, Command};
use tokio::sync::broadcast;

use super::connection::{ConnectOptions, Connection};
use super::handle::CallHandle;
use super::jsonrpc::Notification;
use super::transport::{BoxFuture, McpError, ServerInfo, Transport};

/// A connected child process. Dropping it kills the child; [`StdioTransport::shutdown`]
/// closes its input, waits a grace period, then kills it, and reaps it.
#[derive(Debug)]
pub struct StdioTransport {
    conn: Option<Connection>,
    child: Child,
    server: ServerInfo,
}

impl StdioTransport {
    /// Starts `command` with piped stdin and stdout and runs the
    /// handshake. A child that fails the handshake is killed.
    ///
    /// # Errors
    ///
    /// [`McpError::Transport`] when the command cannot start; the
    /// handshake's errors (a protocol version this client does not speak,
    /// no answer within `options.request_timeout`, a closed pipe).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcppol::mcp::{ConnectOptions, StdioTransport, Transport};
    /// use tokio::process::Command;
    ///
    /// # async fn run() -> Result<(), mcppol::mcp::McpError> {
    /// let mut command = Command::new("npx");
    /// command.args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/work"]);
    /// let server = StdioTransport::spawn(command, ConnectOptions::default()).await?;
    /// println!("{} tools", server.list_all_tools().await?.len());
    /// server.shutdown(Duration::from_secs(2)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn spawn(mut command: Command, options: ConnectOptions) -> Result<Self, McpError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| McpError::Transport(format!("cannot start the server: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill().await;
            return Err(McpError::Transport("the server's pipes are missing".into()));
        };
        match Connection::connect(BufReader::new(stdout), stdin, options).await {
            Ok(conn) => {
                let server = conn.server().clone();
                Ok(StdioTransport {
                    conn: Some(conn),
                    child,
                    server,
                })
            }
            Err(e) => {
                let _ = child.kill().await;
                Err(e)
            }
        }
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Closes the child's stdin (the MCP way to ask a stdio server to
    /// stop), waits up to `grace` for it to exit, then kills it; the child
    /// is reaped either way.
    pub async fn shutdown(mut self, grace: Duration) -> Result<ExitStatus, McpError> {
        drop(self.conn.take());
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => Ok(status),
            Ok(Err(e)) => Err(McpError::Transport(format!("waiting for the server: {e}"))),
            Err(_) => {
                let _ = self.child.start_kill();
                self.child
                    .wait()
                    .await
                    .map_err(|e| McpError::Transport(format!("waiting for the server: {e}")))
            }
        }
    }

    fn conn(&self) -> Result<&Connection, McpError> {
        self.conn
            .as_ref()
            .ok_or_else(|| McpError::Transport("the connection was closed".into()))
    }
}

impl Transport for StdioTransport {
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move { self.conn()?.request(method, params).await })
    }

    fn request_with<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
        handle: &'a CallHandle,
    ) -> BoxFuture<'a, Result<Value, McpError>> {
        Box::pin(async move { self.conn()?.request_with(method, params, handle).await })
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async move { self.conn()?.notify(method, params).await })
    }

    fn subscribe(&self) -> broadcast::Receiver<Notification> {
        match &self.conn {
            Some(c) => c.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    fn server(&self) -> &ServerInfo {
        &self.server
    }
}
