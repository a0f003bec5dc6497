//! `mcppol gateway`: one policy point for many MCP servers behind one MCP
//! endpoint (see `docs/gateway.md`). The host sees one server whose tools
//! and prompts are every server's, namespaced `SERVER__NAME`; each server
//! keeps its own [`Pipeline`] (all on the one store, so a reload changes
//! every server at once), and the gateway maps each pipeline's outcome to
//! the host's answer as the proxy does, deciding nothing itself.
//!
//! - `naming.rs`: names out and back, resource routes;
//! - `upstream.rs`: each server's child, connection, pipeline, restarts;
//!   `transport.rs`: the connection as the pipeline's transport;
//!   `notes.rs`: a server's notifications to the host;
//! - `host.rs`: what the host sends; `requests.rs`: each request served;
//! - `taint.rs`: the session's taint, kept by the gateway itself (and in
//!   Redis with `--state`, as the grants are);
//! - `stateless.rs`: MCP 2026-07-28 on the host side (no session,
//!   `server/discover`, `_meta`, the routing headers);
//!   `input_required.rs`: an ask put to such a host; `server_input.rs`:
//!   a 2026-07-28 server's own `input_required`, settled with the host in
//!   its version's form; over HTTP,
//!   `http.rs`, `http_session.rs` and `http_stateless.rs`.

mod host;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
mod http_session;
#[cfg(feature = "http")]
mod http_stateless;
mod input_required;
#[cfg(feature = "http")]
pub(crate) mod metrics;
mod naming;
mod notes;
mod requests;
mod server_input;
mod stateless;
mod taint;
mod transport;
mod upstream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

pub(crate) use naming::DEFAULT_SEPARATOR;

use crate::mcp::peer::Peer;
use crate::mcp::McpError;
use crate::pipeline::{Baseline, Grants, Hook, Pipeline, PolicySource};
use crate::proxy::{approve, Audit};
use crate::servers::ServerSpec;
use crate::store::Store;

/// The gateway's settings (the command line's flags); over HTTP, each
/// session's copy with its caller.
#[derive(Clone)]
pub(crate) struct Config {
    /// The servers, in the servers file's order.
    pub(crate) servers: Vec<ServerSpec>,
    pub(crate) store: Arc<Store>,
    pub(crate) policy_name: String,
    pub(crate) baseline: Baseline,
    pub(crate) audit: Option<Arc<Audit>>,
    pub(crate) approver: Option<String>,
    pub(crate) hooks: Vec<Hook>,
    /// Between a server id and a tool or prompt name (`__`).
    pub(crate) separator: String,
    pub(crate) max_line_bytes: usize,
    pub(crate) max_pending: usize,
    pub(crate) call_timeout: Duration,
    /// How long a server has to answer `initialize`.
    pub(crate) start_timeout: Duration,
    /// How often a remote server is sent `ping` (zero: never).
    pub(crate) ping_interval: Duration,
    /// How long a remote server has to answer a `ping`.
    pub(crate) ping_timeout: Duration,
    /// How long a server has to exit once its stdin is closed.
    pub(crate) grace: Duration,
    pub(crate) shape: Option<usize>,
    pub(crate) protected: crate::protected::Protected,
    /// Who the session's requests are made for (a bearer token's
    /// principal over HTTP; none over stdio).
    pub(crate) principal: Option<String>,
    /// The principal's `assigns`.
    pub(crate) assigns: Option<Value>,
    /// How long a stateless (2026-07-28) host's taint is kept after its
    /// last result (`--taint-ttl`).
    pub(crate) taint_ttl: Duration,
    /// The taint this session shares: over HTTP, a stateless host's
    /// principal's (it outlives the gateway session); `None`: the
    /// session's own.
    pub(crate) taint: Option<Arc<taint::Taint>>,
    /// The session's id (`Mcp-Session-Id` over HTTP; none over stdio, the
    /// process's one session): what `limit ... per session` counts for.
    pub(crate) session: Option<String>,
    /// The budgets' counters, shared by every session and server.
    pub(crate) budgets: Arc<dyn crate::Budgets>,
    /// Grants and taint shared by replicas (`--state`); `None`: each
    /// session keeps its own in memory.
    pub(crate) shared: Option<crate::shared_state::SharedState>,
    /// Prometheus metrics (`--metrics`), shared by every session.
    #[cfg(feature = "http")]
    pub(crate) metrics: Option<Arc<metrics::Metrics>>,
}

/// Whether the servers run, and how they are ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Run,
    /// Input closed, a grace period, then a kill of the group.
    Grace,
    /// The gateway got this signal: SIGTERM to each group, then a kill.
    Signal(i32),
}

/// What every task of the gateway shares.
pub(crate) struct Shared {
    pub(crate) store: Arc<Store>,
    pub(crate) policy_name: String,
    pub(crate) host: Arc<Peer>,
    pub(crate) host_caps: OnceLock<Value>,
    pub(crate) upstreams: Vec<Arc<upstream::Upstream>>,
    pub(crate) separator: String,
    pub(crate) taint: Arc<taint::Taint>,
    pub(crate) taint_ttl: Duration,
    /// Whether the host is stateless (2026-07-28: it sent no `initialize`;
    /// each request carries its version in `_meta`).
    pub(crate) stateless_host: std::sync::atomic::AtomicBool,
    /// A stateless host's calls that may ask it, and those waiting for
    /// its retry.
    pub(crate) asks: Arc<input_required::Asks>,
    pub(crate) routes: Mutex<naming::ResourceRoutes>,
    pub(crate) inflight: Mutex<HashMap<crate::mcp::Id, host::Inflight>>,
    pub(crate) audit: Option<Arc<Audit>>,
    pub(crate) max_line_bytes: usize,
    pub(crate) max_pending: usize,
    pub(crate) call_timeout: Duration,
    pub(crate) start_timeout: Duration,
    pub(crate) ping_interval: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) shape: Option<usize>,
    pub(crate) principal: Option<String>,
    pub(crate) assigns: Option<Value>,
    pub(crate) session: Option<String>,
    pub(crate) budgets: Arc<dyn crate::Budgets>,
    #[cfg(feature = "http")]
    metrics: Option<Arc<metrics::Metrics>>,
    /// The protocol version the gateway answered `initialize` with.
    pub(crate) protocol: OnceLock<Arc<str>>,
    setup: PipelineSetup,
    stop: watch::Sender<Stop>,
    /// True once every server has come up or failed its first start: the
    /// host's requests sent before `initialize` was answered wait for it.
    pub(crate) started: watch::Sender<bool>,
    supervisors: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// What each server's pipeline is built with (again at each restart).
struct PipelineSetup {
    baseline: Baseline,
    /// The baseline replicas share (`--state`): with the first listing as
    /// the baseline, the first any replica stored.
    approved: Option<Arc<dyn crate::pipeline::ApprovedListings>>,
    approver: Option<String>,
    hooks: Vec<Hook>,
    protected: crate::protected::Protected,
}

impl Shared {
    pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The server of this id.
    pub(crate) fn upstream(&self, id: &str) -> Option<&Arc<upstream::Upstream>> {
        self.upstreams.iter().find(|u| u.id == id)
    }

    /// Whether the host's `initialize` has been answered (or is about to
    /// be): before, it is sent no notification, and its first listing is
    /// still to come.
    pub(crate) fn host_ready(&self) -> bool {
        *self.started.borrow()
    }

    /// One governed request's outcome, for the metrics.
    pub(crate) fn count(&self, server: &str, decision: &str, reason: &str) {
        #[cfg(feature = "http")]
        if let Some(m) = &self.metrics {
            m.decision(server, decision, reason);
        }
        #[cfg(not(feature = "http"))]
        let _ = (server, decision, reason);
    }

    /// How long a governed request to `server` took, for the metrics.
    pub(crate) fn took(&self, server: &str, started: std::time::Instant) {
        #[cfg(feature = "http")]
        if let Some(m) = &self.metrics {
            m.latency(server, started.elapsed());
        }
        #[cfg(not(feature = "http"))]
        let _ = (server, started);
    }

    /// A server failed (to start, while running, or a request), for the
    /// metrics.
    pub(crate) fn upstream_error(&self, server: &str) {
        #[cfg(feature = "http")]
        if let Some(m) = &self.metrics {
            m.upstream_error(server);
        }
        #[cfg(not(feature = "http"))]
        let _ = server;
    }

    /// A server came up or went down: the host lists again.
    pub(crate) async fn lists_changed(&self) {
        if !self.host_ready() {
            return;
        }
        for method in [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ] {
            self.host.notify(method, None).await;
        }
    }
}

/// Builds a server's pipeline over its new connection.
pub(crate) fn build_pipeline(
    gw: &Shared,
    server: &str,
    transport: Arc<transport::Kept>,
    grants: Arc<dyn Grants>,
) -> Result<Pipeline, String> {
    let caps = gw.host_caps.get().cloned().unwrap_or(Value::Null);
    let setup = &gw.setup;
    let mut builder = Pipeline::builder(
        server,
        transport,
        PolicySource::Store {
            store: gw.store.clone(),
            name: gw.policy_name.clone(),
        },
    )
    .baseline(setup.baseline.clone())
    .hooks(setup.hooks.clone())
    .grants(grants)
    .budgets(gw.budgets.clone())
    // The servers are children on this machine: path tests read links.
    .local_tool(true)
    .protect(setup.protected.clone());
    if let Some(approved) = &setup.approved {
        builder = builder.approved_listings(approved.clone());
    }
    // Asks are settled in the proxy's order: the command, then the host
    // (a stateless one through `input_required`).
    if let Some(command) = &setup.approver {
        builder = builder.approver(approve::ProxyApprover::Command {
            command: command.clone(),
            host: gw.host.clone(),
        });
    } else if gw.stateless_host.load(std::sync::atomic::Ordering::Relaxed) {
        builder = builder.approver(input_required::HostInput(gw.asks.clone()));
    } else if approve::host_elicits(&caps) {
        builder = builder.approver(approve::ProxyApprover::Elicit(gw.host.clone()));
    }
    // One sink for the audit line, the metrics' count and the decision span.
    #[cfg(feature = "http")]
    let metrics = gw.metrics.clone();
    #[cfg(not(feature = "http"))]
    let metrics: Option<()> = None;
    #[cfg(feature = "otel")]
    let otel = crate::otel::active();
    #[cfg(not(feature = "otel"))]
    let otel = false;
    if gw.audit.is_some() || metrics.is_some() || otel {
        let audit = gw.audit.clone();
        // A session's pipelines serve one caller: its lines name them.
        let principal = gw.principal.clone();
        builder = builder.audit(Arc::new(move |r| {
            let r = &r.with_principal(principal.as_deref());
            #[cfg(feature = "otel")]
            crate::otel::note(r);
            #[cfg(feature = "http")]
            if let Some(m) = &metrics {
                m.decision(r.server, r.decision, r.reason);
            }
            match &audit {
                Some(audit) => audit.write_record(r),
                None => Ok(()),
            }
        }));
    }
    builder.build().map_err(|e| e.to_string())
}

/// Runs the gateway over the process's stdin and stdout until the host
/// closes its input or a signal comes; returns the exit status.
pub(crate) async fn run_stdio(config: Config) -> u8 {
    let mut signals = crate::proxy::child::Signals::new();
    let names: Vec<&str> = config.servers.iter().map(|s| s.id.as_str()).collect();
    tracing::info!(target: "mcppol::gateway", servers = %names.join(","), policy = %config.policy_name, "the gateway starts (stdio)");
    let (gw, session) = serve(
        config,
        crate::proxy::own_stdio::stdin(),
        crate::proxy::own_stdio::stdout(),
    );
    tokio::pin!(session);
    let signal = tokio::select! {
        () = &mut session => None,
        signal = signals.next() => Some(signal),
    };
    match signal {
        None => 0,
        Some(signal) => {
            tracing::warn!(target: "mcppol::gateway", signal, "a signal: ending every server's process group");
            stop_servers(&gw, Stop::Signal(signal)).await;
            u8::try_from(128 + signal).unwrap_or(1)
        }
    }
}

/// One host session over any byte streams: the gateway's shared state, and
/// the session, which ends when the host's input does (every server then
/// stopped, every request still in flight answered).
pub(crate) fn serve<R, W>(
    config: Config,
    host_in: R,
    host_out: W,
) -> (Arc<Shared>, impl std::future::Future<Output = ()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let host = Peer::start("host", host_out, config.max_pending, None);
    let gw = shared(config, host);
    let session = {
        let gw = gw.clone();
        async move {
            host::read(gw.clone(), host_in).await;
            host_gone(&gw).await;
        }
    };
    (gw, session)
}

/// One host session whose messages come and go as values: what the host
/// sends is given to [`host::on_message`] (an HTTP POST's body, parsed
/// once), what the gateway sends it is handed to `to_host` as it is sent
/// (no pipe, no writer task, no second parse). The session ends once
/// `ended` is done, as [`serve`]'s does when the host's input closes.
#[cfg(feature = "http")]
pub(crate) fn serve_direct(
    config: Config,
    to_host: Arc<dyn crate::mcp::peer::Deliver>,
    ended: impl std::future::Future<Output = ()> + Send + 'static,
) -> (Arc<Shared>, impl std::future::Future<Output = ()>) {
    let host = Peer::direct("host", to_host, config.max_pending);
    let gw = shared(config, host);
    let session = {
        let gw = gw.clone();
        async move {
            ended.await;
            host_gone(&gw).await;
        }
    };
    (gw, session)
}

/// The host's input is over: every server is stopped, every request still
/// in flight answered, and what is queued for the host written.
async fn host_gone(gw: &Arc<Shared>) {
    tracing::info!(target: "mcppol::gateway", "the host closed the input: stopping every server");
    gw.host
        .close(McpError::Transport("the host closed its input".into()));
    stop_servers(gw, Stop::Grace).await;
    for _ in 0..200 {
        if Shared::lock(&gw.inflight).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    host::give_up(gw).await;
    gw.host.finish(Duration::from_secs(2)).await;
}

/// The state a session's tasks share, around its host side.
fn shared(config: Config, host: Peer) -> Arc<Shared> {
    let shared_grants = config.shared.as_ref().map(|s| s.grants.clone());
    Arc::new(Shared {
        store: config.store,
        policy_name: config.policy_name,
        host: Arc::new(host),
        host_caps: OnceLock::new(),
        upstreams: config
            .servers
            .into_iter()
            .map(|s| Arc::new(upstream::Upstream::new(s, shared_grants.clone())))
            .collect(),
        separator: config.separator,
        taint: config.taint.unwrap_or_else(|| {
            Arc::new(taint::Taint::session(
                config.session.as_deref(),
                config.shared.as_ref().map(|s| s.taint.clone()),
                config.taint_ttl,
            ))
        }),
        taint_ttl: config.taint_ttl,
        stateless_host: std::sync::atomic::AtomicBool::new(false),
        asks: Arc::default(),
        routes: Mutex::default(),
        inflight: Mutex::default(),
        audit: config.audit,
        max_line_bytes: config.max_line_bytes,
        max_pending: config.max_pending,
        call_timeout: config.call_timeout,
        start_timeout: config.start_timeout,
        ping_interval: config.ping_interval,
        ping_timeout: config.ping_timeout,
        grace: config.grace,
        shape: config.shape,
        principal: config.principal,
        assigns: config.assigns,
        session: config.session,
        budgets: config.budgets,
        #[cfg(feature = "http")]
        metrics: config.metrics,
        protocol: OnceLock::new(),
        setup: PipelineSetup {
            baseline: config.baseline,
            approved: config.shared.as_ref().map(|s| s.approved.clone()),
            approver: config.approver,
            hooks: config.hooks,
            protected: config.protected,
        },
        stop: watch::channel(Stop::Run).0,
        started: watch::channel(false).0,
        supervisors: Mutex::default(),
    })
}

/// Starts every server (once, at the host's `initialize`) and waits until
/// each has come up or failed its first start.
pub(crate) async fn start_servers(gw: &Arc<Shared>) {
    let mut ready = Vec::new();
    let mut supervisors = Vec::new();
    for up in &gw.upstreams {
        let (tx, rx) = tokio::sync::oneshot::channel();
        ready.push(rx);
        supervisors.push(tokio::spawn(upstream::supervise(
            gw.clone(),
            up.clone(),
            tx,
            gw.stop.subscribe(),
        )));
    }
    Shared::lock(&gw.supervisors).extend(supervisors);
    for rx in ready {
        let _ = rx.await;
    }
    gw.started.send_replace(true);
}

/// Stops every server and waits for each to be reaped.
async fn stop_servers(gw: &Shared, how: Stop) {
    let _ = gw.stop.send(how);
    let supervisors: Vec<_> = Shared::lock(&gw.supervisors).drain(..).collect();
    for s in supervisors {
        let _ = s.await;
    }
}

/// 128 bits from the system's random source, as hex: a session id, a
/// `requestState`.
pub(crate) fn random_token() -> Option<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Checks the separator against the servers' ids (see `naming.rs`).
pub(crate) fn check_names(ids: &[&str], separator: &str) -> Result<(), String> {
    naming::check(ids, separator)
}
