//! One upstream server of the gateway: its child process, its connection,
//! its pipeline, and the task that keeps it running. A server that cannot
//! start, exits, or breaks the protocol is marked down (its calls fail
//! with `-32603` naming it, its tools leave the listing, the host is told
//! with `list_changed`) and started again after a backoff that doubles up
//! to [`MAX_BACKOFF`]. Nothing one server does reaches another's state.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::BufReader;
use tokio::process::{Child, Command};
use tokio::sync::watch;

use super::transport::Kept;
use super::{Shared, Stop};
use crate::mcp::peer::Wait;
use crate::mcp::{BoxFuture, ConnectOptions, Connection, RequestHandler, RpcError, Transport};
use crate::pipeline::{Grants, MemoryGrants, Pipeline, SystemClock};
use crate::proxy::child;
use crate::servers::{ServerSpec, ServerTransport};

/// The first wait before a failed server is started again.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two starts of a failing server.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A server that stayed up this long starts its next backoff afresh.
const STABLE: Duration = Duration::from_secs(30);
/// How often a live connection is checked for having closed (a line over
/// the bound, a broken pipe) while its child still runs.
const PROBE: Duration = Duration::from_millis(250);

/// One server behind the gateway.
pub(crate) struct Upstream {
    /// Its server id (its key in the servers file).
    pub(crate) id: String,
    spec: ServerSpec,
    state: RwLock<State>,
    /// `allow_always` grants, per principal, kept across restarts of the
    /// server (a restart is not a new approval); with `--state`, shared by
    /// every session and replica.
    grants: Arc<dyn Grants>,
}

/// Whether a server can be called now.
#[derive(Clone)]
pub(crate) enum State {
    /// Not started yet (the host has not initialized).
    Starting,
    /// Connected.
    Up(Arc<Live>),
    /// Down, and why; started again after a backoff.
    Down(String),
}

/// A connected server: what requests to it go through.
pub(crate) struct Live {
    /// The connection, for what the gateway relays ungoverned (listing
    /// prompts and resources, subscriptions).
    pub(crate) transport: Arc<Kept>,
    /// The governed path: every tool call, resource read and prompt get.
    pub(crate) pipeline: Arc<Pipeline>,
}

impl Upstream {
    /// A server of a session, its grants in `grants` (`--state`: every
    /// replica's) or else its own in memory.
    pub(crate) fn new(spec: ServerSpec, grants: Option<Arc<dyn Grants>>) -> Upstream {
        Upstream {
            id: spec.id.clone(),
            spec,
            state: RwLock::new(State::Starting),
            grants: grants.unwrap_or_else(|| Arc::new(MemoryGrants::new(Arc::new(SystemClock)))),
        }
    }

    /// The server's state now.
    pub(crate) fn state(&self) -> State {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The live connection, or the `-32603` error naming the server.
    pub(crate) fn live(&self) -> Result<Arc<Live>, RpcError> {
        match self.state() {
            State::Up(live) => Ok(live),
            State::Starting => Err(unavailable(&self.id, "it has not started yet")),
            State::Down(why) => Err(unavailable(&self.id, &why)),
        }
    }

    fn set(&self, state: State) {
        *self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state;
    }
}

/// The error of a call to a server that is down.
pub(crate) fn unavailable(server: &str, why: &str) -> RpcError {
    RpcError::new(
        crate::mcp::codes::INTERNAL_ERROR,
        format!("mcppol: the server `{server}` is not available ({why}); the gateway is starting it again"),
    )
}

/// Keeps `up` running until the gateway stops: starts it, watches it,
/// marks it down and starts it again. `ready` is told once the first
/// start has succeeded or failed.
pub(crate) async fn supervise(
    gw: Arc<Shared>,
    up: Arc<Upstream>,
    ready: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<Stop>,
) {
    let mut ready = Some(ready);
    let mut backoff = FIRST_BACKOFF;
    let mut first = true;
    loop {
        if *stop.borrow() != Stop::Run {
            return;
        }
        match start(&gw, &up).await {
            Ok((mut child, transport)) => {
                let pipeline = match super::build_pipeline(
                    &gw,
                    &up.id,
                    transport.clone(),
                    up.grants.clone(),
                ) {
                    Ok(p) => Arc::new(p),
                    Err(why) => {
                        // Not the server's fault, and the same next time:
                        // the server stays down, and it is said once.
                        tracing::error!(target: "mcppol::gateway", server = %up.id, error = %why, "the pipeline cannot be built");
                        up.set(State::Down(why));
                        if let Some(c) = child.as_mut() {
                            child::stop(c, Duration::ZERO).await;
                        }
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                        let _ = stop.changed().await;
                        return;
                    }
                };
                let live = Arc::new(Live {
                    transport: transport.clone(),
                    pipeline,
                });
                up.set(State::Up(live.clone()));
                tracing::info!(target: "mcppol::gateway", server = %up.id, protocol = %transport.server().protocol_version, "the server is up");
                if !first {
                    gw.lists_changed().await;
                }
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
                let forwarder =
                    tokio::spawn(super::notes::forward(gw.clone(), up.id.clone(), live));
                let since = Instant::now();
                let ping = child.is_none().then_some(Ping {
                    every: gw.ping_interval,
                    within: gw.ping_timeout,
                });
                let ended = tokio::select! {
                    status = exited(child.as_mut()) => Ended::Failed(match status {
                        Ok(s) => format!("it exited ({s})"),
                        Err(e) => format!("waiting for it failed: {e}"),
                    }),
                    why = closed(&transport) => Ended::Failed(why),
                    // A remote server has no child whose exit says it is
                    // gone: one that stops answering `ping` is down too.
                    why = unresponsive(&transport, ping) => Ended::Failed(why),
                    how = stopped(&mut stop) => Ended::Stopped(how),
                };
                forwarder.abort();
                match ended {
                    Ended::Stopped(how) => {
                        up.set(State::Down("the gateway is stopping".into()));
                        // A remote session is ended (`DELETE`) when nothing
                        // else holds its connection.
                        if let Ok(kept) = Arc::try_unwrap(transport) {
                            kept.shutdown(gw.grace).await;
                        }
                        if let Some(c) = child.as_mut() {
                            end_child(c, how, gw.grace).await;
                        }
                        return;
                    }
                    Ended::Failed(why) => {
                        tracing::warn!(target: "mcppol::gateway", server = %up.id, why = %why, "the server failed: its calls fail until it is back");
                        up.set(State::Down(why));
                        gw.upstream_error(&up.id);
                        drop(transport);
                        // Gone or broken: whatever is left of its group goes.
                        if let Some(c) = child.as_mut() {
                            child::stop(c, Duration::ZERO).await;
                        }
                        gw.lists_changed().await;
                        if since.elapsed() >= STABLE {
                            backoff = FIRST_BACKOFF;
                        }
                    }
                }
            }
            Err(why) => {
                tracing::warn!(target: "mcppol::gateway", server = %up.id, why = %why, retry_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX), "the server cannot be started");
                up.set(State::Down(why));
                gw.upstream_error(&up.id);
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
            }
        }
        first = false;
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stopped(&mut stop) => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A child's exit; never, for a remote server.
async fn exited(child: Option<&mut Child>) -> std::io::Result<std::process::ExitStatus> {
    match child {
        Some(c) => c.wait().await,
        None => std::future::pending().await,
    }
}

enum Ended {
    Failed(String),
    Stopped(Stop),
}

/// Waits until the gateway stops (or is gone).
async fn stopped(stop: &mut watch::Receiver<Stop>) -> Stop {
    loop {
        let now = *stop.borrow_and_update();
        if now != Stop::Run {
            return now;
        }
        if stop.changed().await.is_err() {
            return Stop::Grace;
        }
    }
}

/// Ends a live server's child: its input is closed (the transport was
/// dropped), then a grace period and a kill of its group; a signal to the
/// gateway passes SIGTERM on to the group first.
async fn end_child(child: &mut Child, how: Stop, grace: Duration) {
    match how {
        Stop::Signal(signal) => {
            child::terminate(child, signal).await;
        }
        Stop::Grace | Stop::Run => {
            child::stop(child, grace).await;
        }
    }
}

/// Resolves once the connection has closed, with why.
async fn closed(transport: &Kept) -> String {
    loop {
        if let Some(e) = transport.closed() {
            return format!("its connection closed: {}", crate::mcp::peer::why(e));
        }
        tokio::time::sleep(PROBE).await;
    }
}

/// How a remote server is checked for being alive.
#[derive(Debug, Clone, Copy)]
struct Ping {
    /// Between two pings (zero: never).
    every: Duration,
    /// How long one may take.
    within: Duration,
}

/// Resolves once the server fails to answer a `ping` in time, with why;
/// never when `ping` is `None` (a child's exit says it is gone) or its
/// interval is zero. An error answer is still an answer: the server is
/// alive, and only a timeout or a failed connection mark it down.
async fn unresponsive(transport: &Kept, ping: Option<Ping>) -> String {
    let Some(ping) = ping.filter(|p| !p.every.is_zero()) else {
        return std::future::pending().await;
    };
    // A 2026-07-28 server, which has no `ping`, answers it with "method
    // not found": an answer, so alive all the same.
    loop {
        tokio::time::sleep(ping.every).await;
        match tokio::time::timeout(ping.within, transport.request("ping", None)).await {
            Ok(Ok(_) | Err(crate::mcp::McpError::Rpc(_))) => {}
            Ok(Err(e)) => {
                return format!("its `ping` failed: {}", crate::mcp::peer::why(e));
            }
            Err(_) => {
                return format!(
                    "it did not answer `ping` within {}",
                    humantime::format_duration(ping.within)
                );
            }
        }
    }
}

/// Starts the server's child in a process group of its own and runs the
/// handshake, offering the host's capabilities the server may use.
async fn start(gw: &Arc<Shared>, up: &Upstream) -> Result<(Option<Child>, Arc<Kept>), String> {
    let options = ConnectOptions {
        max_line_bytes: gw.max_line_bytes,
        request_timeout: gw.call_timeout,
        capabilities: client_capabilities(gw.host_caps.get()),
        client_info: json!({"name": "mcppol-gateway", "version": env!("CARGO_PKG_VERSION")}),
        handler: Arc::new(ServerRequests {
            gw: Arc::downgrade(gw),
            server: up.id.clone(),
        }),
        max_pending: gw.max_pending,
        // 2026-07-28 first, `initialize` for a server that does not know it.
        offer_stateless: true,
    };
    let ServerTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &up.spec.transport
    else {
        return remote(gw, up, options).await.map(|t| (None, t));
    };
    let mut child = spawn(command, args, env, cwd.as_deref())?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        child::stop(&mut child, Duration::ZERO).await;
        return Err("its pipes are missing".into());
    };
    let handshake = Connection::connect(BufReader::new(stdout), stdin, options);
    match tokio::time::timeout(gw.start_timeout, handshake).await {
        Ok(Ok(conn)) => Ok((
            Some(child),
            Arc::new(Kept::new(conn, Arc::downgrade(gw), &up.id)),
        )),
        Ok(Err(e)) => {
            child::stop(&mut child, Duration::ZERO).await;
            Err(format!(
                "its handshake failed: {}",
                crate::mcp::peer::why(e)
            ))
        }
        Err(_) => {
            child::stop(&mut child, Duration::ZERO).await;
            Err(format!(
                "it did not answer `initialize` within {}",
                humantime::format_duration(gw.start_timeout)
            ))
        }
    }
}

/// Connects to a remote server over streamable HTTP (`mcp::connect`).
#[cfg(feature = "http")]
async fn remote(
    gw: &Arc<Shared>,
    up: &Upstream,
    options: ConnectOptions,
) -> Result<Arc<Kept>, String> {
    match tokio::time::timeout(gw.start_timeout, crate::mcp::connect(&up.spec, options)).await {
        Ok(Ok(conn)) => Ok(Arc::new(Kept::remote(conn, Arc::downgrade(gw), &up.id))),
        Ok(Err(e)) => Err(crate::mcp::peer::why(e)),
        Err(_) => Err(format!(
            "it did not answer `initialize` within {}",
            humantime::format_duration(gw.start_timeout)
        )),
    }
}

#[cfg(not(feature = "http"))]
async fn remote(
    _gw: &Arc<Shared>,
    _up: &Upstream,
    _options: ConnectOptions,
) -> Result<Arc<Kept>, String> {
    Err("a remote (HTTP) server, and this build of mcppol has no HTTP (feature `http`)".into())
}

fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<Child, String> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    cmd.spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))
}

/// What the gateway offers a server: the host's `roots`, `sampling` and
/// `elicitation`, which it relays (nothing the host did not declare).
pub(crate) fn client_capabilities(host: Option<&Value>) -> Value {
    let mut caps = serde_json::Map::new();
    if let Some(Value::Object(host)) = host {
        for key in ["roots", "sampling", "elicitation"] {
            if let Some(v) = host.get(key) {
                caps.insert(key.to_string(), v.clone());
            }
        }
    }
    Value::Object(caps)
}

/// A server's own requests (`roots/list`, `sampling/createMessage`,
/// `elicitation/create`), relayed to the host; `roots/list` answered with
/// the host's roots narrowed to the policy's pinned roots, as the proxy
/// does.
struct ServerRequests {
    gw: std::sync::Weak<Shared>,
    server: String,
}

impl RequestHandler for ServerRequests {
    fn handle(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let gw = self.gw.clone();
        let server = self.server.clone();
        Box::pin(async move {
            if method == "ping" {
                return Ok(json!({}));
            }
            let Some(gw) = gw.upgrade() else {
                return Err(RpcError::new(
                    crate::mcp::codes::INTERNAL_ERROR,
                    "mcppol: the gateway is stopping",
                ));
            };
            relay_to_host(&gw, &server, &method, params).await
        })
    }
}

/// A server's request of `method` relayed to an initialized host
/// (`roots/list`, `sampling/createMessage`, `elicitation/create`; any
/// other is not found); `roots/list` answered with the host's roots
/// narrowed to the policy's pinned roots, as the proxy does.
pub(crate) async fn relay_to_host(
    gw: &Shared,
    server: &str,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    if !matches!(
        method,
        "roots/list" | "sampling/createMessage" | "elicitation/create"
    ) {
        return Err(RpcError::method_not_found(method));
    }
    let answer = gw
        .host
        .request(method, params, Wait::default())
        .await
        .map_err(crate::proxy::host::closed);
    if method != "roots/list" {
        return answer;
    }
    Ok(narrow_roots(gw, server, answer))
}

/// The host's answer to `roots/list` narrowed to the policy's pinned
/// roots (as it is when the policy pins none); a host that listed none
/// (an error) gives the server none when roots are pinned.
pub(crate) fn narrow_roots(gw: &Shared, server: &str, answer: Result<Value, RpcError>) -> Value {
    let pinned = gw
        .store
        .get(&gw.policy_name)
        .and_then(|p| p.roots().map(<[String]>::to_vec));
    let Some(pinned) = pinned else {
        return answer.unwrap_or_else(|_| json!({ "roots": [] }));
    };
    let host_roots = match answer {
        Ok(v) => v
            .get("roots")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        Err(e) => {
            tracing::warn!(target: "mcppol::gateway", server = %server, code = e.code, "the host did not list its roots: the server gets none");
            Vec::new()
        }
    };
    let (kept, dropped) = crate::proxy::roots::pin(&host_roots, &pinned);
    for uri in &dropped {
        tracing::warn!(target: "mcppol::gateway", server = %server, root = %uri, "a root of the host outside every pinned root was dropped");
    }
    json!({ "roots": kept })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_offered_only_what_the_host_declared() {
        let host =
            json!({"roots": {"listChanged": true}, "elicitation": {}, "experimental": {"x": 1}});
        assert_eq!(
            client_capabilities(Some(&host)),
            json!({"roots": {"listChanged": true}, "elicitation": {}})
        );
        assert_eq!(client_capabilities(None), json!({}));
    }

    #[test]
    fn a_down_server_is_named_in_its_error() {
        let e = unavailable("memory", "it exited (exit status: 3)");
        assert_eq!(e.code, -32603);
        assert!(
            e.message.contains("`memory`") && e.message.contains("exit status"),
            "{}",
            e.message
        );
    }
}
