//! One way to reach a server of a servers file, whatever its transport: a
//! child process for a stdio server, streamable HTTP for a remote one
//! (feature `http`). The gateway, `mcppol tools` and the proxy's
//! `--servers` use it.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;
use tokio::sync::broadcast;

use super::connection::ConnectOptions;
use super::handle::CallHandle;
use super::jsonrpc::Notification;
use super::stdio::StdioTransport;
use super::transport::{BoxFuture, McpError, ServerInfo, Transport};
use crate::servers::{ServerSpec, ServerTransport};

#[cfg(feature = "http")]
use super::http::HttpTransport;

/// A connected server of a servers file: a child process or a remote
/// server, used through [`Transport`] alike.
#[derive(Debug)]
pub struct ServerConnection {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    // Both boxed: each is some hundreds of bytes, of different sizes.
    /// A child process on its stdio.
    Stdio(Box<StdioTransport>),
    /// A remote server over streamable HTTP.
    #[cfg(feature = "http")]
    Http(Box<HttpTransport>),
}

/// Reaches the server `spec` describes and runs the handshake: a stdio
/// server is started (its `args`, its `env` added to this process's, in
/// its `cwd`; its stderr is this process's), a remote one connected with
/// its headers.
///
/// # Errors
///
/// The transport's: a command that cannot start, a server that cannot be
/// reached or fails the handshake (each naming what failed), and, in a
/// build without the feature `http`, a remote server.
///
/// ```no_run
/// use std::time::Duration;
/// use mcppol::mcp::{connect, ConnectOptions, Transport};
/// use mcppol::servers::Servers;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let servers = Servers::read(std::path::Path::new(".mcp.json"))?;
/// let server = connect(servers.get("github")?, ConnectOptions::default()).await?;
/// println!("{} tools", server.list_all_tools().await?.len());
/// server.shutdown(Duration::from_secs(2)).await?;
/// # Ok(())
/// # }
/// ```
pub async fn connect(
    spec: &ServerSpec,
    options: ConnectOptions,
) -> Result<ServerConnection, McpError> {
    match &spec.transport {
        ServerTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = Command::new(command);
            child.args(args).envs(env).stderr(Stdio::inherit());
            if let Some(cwd) = cwd {
                child.current_dir(cwd);
            }
            StdioTransport::spawn(child, options)
                .await
                .map(|t| ServerConnection {
                    inner: Inner::Stdio(Box::new(t)),
                })
                .map_err(|e| named(&spec.id, e))
        }
        #[cfg(feature = "http")]
        ServerTransport::Http { url, headers } => HttpTransport::connect(url, headers, options)
            .await
            .map(|t| ServerConnection {
                inner: Inner::Http(Box::new(t)),
            })
            .map_err(|e| named(&spec.id, e)),
        #[cfg(not(feature = "http"))]
        ServerTransport::Http { .. } => {
            drop(options);
            Err(McpError::Transport(format!(
                "server `{}` is remote, and this build of mcppol has no HTTP (feature `http`)",
                spec.id
            )))
        }
    }
}

/// The error with the server's id in front, so that a gateway's log and a
/// user's terminal say which server failed.
fn named(id: &str, e: McpError) -> McpError {
    match e {
        McpError::Transport(m) => McpError::Transport(format!("server `{id}`: {m}")),
        McpError::Protocol(m) => McpError::Protocol(format!("server `{id}`: {m}")),
        other => other,
    }
}

impl ServerConnection {
    /// The transport underneath, as the trait.
    fn inner(&self) -> &dyn Transport {
        match &self.inner {
            Inner::Stdio(t) => t.as_ref(),
            #[cfg(feature = "http")]
            Inner::Http(t) => t.as_ref(),
        }
    }

    /// Whether it is a remote server.
    pub fn is_remote(&self) -> bool {
        !matches!(self.inner, Inner::Stdio(_))
    }

    /// Ends it: a child's stdin is closed, it gets up to `grace` to exit,
    /// then it is killed and reaped; a remote session is ended (`DELETE`,
    /// waited for at most `grace` and two seconds).
    ///
    /// # Errors
    ///
    /// Waiting for a child failed.
    pub async fn shutdown(self, grace: Duration) -> Result<(), McpError> {
        match self.inner {
            Inner::Stdio(t) => t.shutdown(grace).await.map(drop),
            #[cfg(feature = "http")]
            Inner::Http(t) => {
                let _ = tokio::time::timeout(grace, t.close()).await;
                Ok(())
            }
        }
    }
}

impl Transport for ServerConnection {
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
        self.inner().request_with(method, params, handle)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::Servers;

    fn spec(text: &str) -> ServerSpec {
        let servers = Servers::parse(text, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        servers.servers[0].clone()
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_names_the_server() {
        let s = spec(r#"{"mcpServers": {"ghost": {"command": "/nonexistent/mcp-server"}}}"#);
        let e = connect(&s, ConnectOptions::default()).await;
        assert!(
            matches!(&e, Err(McpError::Transport(m)) if m.starts_with("server `ghost`: cannot start")),
            "{e:?}"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_stdio_server_gets_its_args_env_and_cwd() {
        // A shell script as the server: answers initialize with what it
        // was given, then a tools/list with its environment and folder.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let script = r#"read -r init
printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"%s"}}}\n' "$1"
read -r initialized
read -r list
printf '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"%s"},{"name":"%s"}]}}\n' "$GREETING" "$(basename "$PWD")"
read -r rest
"#;
        let text = serde_json::json!({"mcpServers": {"sh": {
            "command": "sh", "args": ["-c", script, "sh", "from-args"],
            "env": {"GREETING": "from-env"}, "cwd": dir.path(),
        }}})
        .to_string();
        let s = spec(&text);
        let server = connect(&s, ConnectOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!server.is_remote());
        assert_eq!(server.server().info["name"], "from-args");
        let tools = server
            .list_all_tools()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let want = dir
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        assert_eq!(tools[0]["name"], "from-env");
        assert_eq!(tools[1]["name"], want.as_str());
        server
            .shutdown(Duration::from_secs(2))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[cfg(feature = "http")]
    #[tokio::test]
    async fn an_unreachable_remote_server_names_the_server() {
        let s =
            spec(r#"{"mcpServers": {"gh": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#);
        let e = connect(&s, ConnectOptions::default()).await;
        assert!(
            matches!(&e, Err(McpError::Transport(m)) if m.starts_with("server `gh`: cannot reach")),
            "{e:?}"
        );
    }
}
