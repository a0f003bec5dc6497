//! `mcppol proxy`: a policy in front of any stdio MCP server. The proxy
//! starts the server as a child and relays newline-delimited JSON-RPC
//! between the host (its own stdin and stdout) and the child, untouched
//! except where it governs: `tools/list`, `tools/call`, `resources/read`,
//! `prompts/get` (through the pipeline) and the server's `roots/list`
//! (pinned roots). See `docs/proxy.md`.
//!
//! `run` starts the child and hands its pipes and the proxy's own stdin and
//! stdout to `serve`, the session itself, which runs over any byte streams
//! (the fuzz target `proxy` drives it in memory).
//!
//! - each side of the wire is a [`Peer`] (`mcp/peer.rs`: writer task,
//!   the proxy's own requests by its own ids);
//! - `host.rs` / `server.rs`: what arrives from each side;
//! - `upstream.rs`: the server side as the pipeline's transport;
//! - `answer.rs`: refusals as MCP answers; `roots.rs`: pinning;
//!   `approve.rs`: the approver command and elicitation; `audit.rs`;
//! - `child.rs`: starting, stopping and reaping the server;
//!   `own_stdio.rs`: the proxy's own stdin and stdout, read and written
//!   on the runtime's thread when they are pipes.

pub(crate) mod answer;
pub(crate) mod approve;
mod audit;
pub(crate) mod child;
pub(crate) mod host;
pub(crate) mod own_stdio;
pub(crate) mod roots;
mod server;
mod upstream;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) use audit::Audit;
use upstream::Upstream;

use crate::mcp::jsonrpc::Id;
use crate::mcp::peer::Peer;
use crate::mcp::{CallHandle, McpError};
use crate::pipeline::{Baseline, Hook, Pipeline, PolicySource};
use crate::store::Store;

/// The most the read buffer of each side grows to: a pipe's whole
/// capacity (64 KiB on Linux), so a large message is read in a few calls,
/// not one per 8 KiB. It starts at 8 KiB and grows only when a read fills
/// it (`GrowingBufReader`): small messages keep it small.
pub(crate) const READ_BUFFER: usize = 64 << 10;

/// The proxy's settings (the command line's flags): the session's, and
/// how to start and stop the server.
pub(crate) struct Config {
    pub(crate) session: Session,
    /// The server command and its arguments.
    pub(crate) command: Vec<String>,
    /// Variables added to the server's environment (a servers file's
    /// `env`).
    pub(crate) env: std::collections::BTreeMap<String, String>,
    /// The folder the server runs in (a servers file's `cwd`).
    pub(crate) cwd: Option<std::path::PathBuf>,
    /// How long the server has to exit once its stdin is closed.
    pub(crate) grace: Duration,
}

/// What a session needs, whatever carries its two sides.
pub(crate) struct Session {
    pub(crate) server_id: String,
    pub(crate) store: Arc<Store>,
    pub(crate) policy_name: String,
    pub(crate) baseline: Baseline,
    pub(crate) audit: Option<Arc<Audit>>,
    pub(crate) approver: Option<String>,
    pub(crate) hooks: Vec<Hook>,
    /// The longest JSON-RPC line read from either side.
    pub(crate) max_line_bytes: usize,
    /// The most requests in flight each way.
    pub(crate) max_pending: usize,
    /// How long the server has to answer a governed request.
    pub(crate) call_timeout: Duration,
    /// Tool results shaped for the model, capped at this many bytes;
    /// `None` (`--no-shape`) relays them as they came.
    pub(crate) shape: Option<usize>,
    /// The files no call may write: the policy, its tests and lock files,
    /// the lock, the audit and hooks files (the fixed `protected_policy`
    /// rule before the policy).
    pub(crate) protected: crate::protected::Protected,
    /// What `--state` shares with other processes: the budgets' counters
    /// and the grants (`None`: the pipeline's own, in memory).
    pub(crate) state: Option<SharedState>,
}

/// The stores `--state` names, for the proxy's one pipeline.
#[derive(Clone)]
pub(crate) struct SharedState {
    /// The budgets' counters.
    pub(crate) budgets: Arc<dyn crate::Budgets>,
    /// The grants `allow always` records.
    pub(crate) grants: Arc<dyn crate::pipeline::Grants>,
    /// The server's approved fingerprints, shared with other replicas.
    pub(crate) approved: Arc<dyn crate::pipeline::ApprovedListings>,
}

/// Which side ended a session first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndedBy {
    /// The host closed its input.
    Host,
    /// The server's output ended (it exited), broke the line bound or
    /// could not be read.
    Server,
}

/// A host request in flight: its task, and the handle of what the proxy
/// sent the server for it (so a cancellation can be passed on).
pub(crate) struct Inflight {
    abort: tokio::task::AbortHandle,
    handle: CallHandle,
    /// This request's own number: its task answers only while its entry
    /// is still the one under its id (a cancellation or the session's end
    /// took it otherwise).
    seq: u64,
}

/// What every task of the proxy shares.
pub(crate) struct Shared {
    pub(crate) server_id: String,
    pub(crate) store: Arc<Store>,
    pub(crate) policy_name: String,
    pub(crate) host: Arc<Peer>,
    pub(crate) server: Arc<Peer>,
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) pipeline: OnceLock<Arc<Pipeline>>,
    /// The host's `initialize` capabilities.
    pub(crate) host_caps: OnceLock<Value>,
    /// Host requests in flight, by the host's id.
    pub(crate) inflight: Mutex<HashMap<Id, Inflight>>,
    /// Server requests relayed to the host, by the server's id: the
    /// handle of what the proxy sent the host for each, and its task.
    pub(crate) relayed: Mutex<HashMap<Id, (CallHandle, tokio::task::AbortHandle)>>,
    pub(crate) audit: Option<Arc<Audit>>,
    pub(crate) max_pending: usize,
    pub(crate) max_line_bytes: usize,
    /// Tool results shaped for the model, capped at this many bytes.
    pub(crate) shape: Option<usize>,
    /// Taken when the pipeline is built (after the handshake).
    pub(crate) setup: Mutex<Option<Setup>>,
    /// The listing again after the server's `list_changed` (server.rs).
    pub(crate) relist: Mutex<Relist>,
}

/// Whether a listing after `list_changed` runs, and whether another
/// `list_changed` came since it started.
#[derive(Default)]
pub(crate) struct Relist {
    pub(crate) running: bool,
    pub(crate) again: bool,
}

/// What building the pipeline needs, kept until the handshake is done.
pub(crate) struct Setup {
    pub(crate) baseline: Baseline,
    pub(crate) approver: Option<String>,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) protected: crate::protected::Protected,
    pub(crate) state: Option<SharedState>,
}

impl Shared {
    pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn policy_source(&self) -> PolicySource {
        PolicySource::Store {
            store: self.store.clone(),
            name: self.policy_name.clone(),
        }
    }
}

/// Runs the proxy until the host closes its input or the server exits;
/// returns the exit status (the server's).
pub(crate) async fn run(config: Config) -> u8 {
    let mut child = match child::spawn(&config.command, &config.env, config.cwd.as_deref()) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("error: {message}");
            return child::CANNOT_START;
        }
    };
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("error: the server's pipes are missing");
        child::stop(&mut child, Duration::ZERO).await;
        return child::CANNOT_START;
    };
    let grace = config.grace;
    // SIGTERM, SIGINT and SIGHUP end the session at once, whatever it is
    // doing (the grace after the host closed its input included): the
    // server's process group is ended before the proxy exits, so no host
    // that closes a server by a signal leaves one behind.
    let mut signals = child::Signals::new();
    let signalled = {
        let child = &mut child;
        let session = serve(
            config.session,
            own_stdio::stdin(),
            own_stdio::stdout(),
            child_in,
            child_out,
            move |_| child::stop(child, grace),
        );
        tokio::select! {
            status = session => Err(status),
            signal = signals.next() => Ok(signal),
        }
    };
    let status = match signalled {
        Err(status) => status,
        Ok(signal) => {
            tracing::warn!(target: "mcppol::proxy", signal, "a signal: ending the server's process group");
            child::terminate(&mut child, signal).await
        }
    };
    tracing::info!(target: "mcppol::proxy", status = %status.describe, "the server ended");
    status.code
}

/// One session between a host and a server over any byte streams: the
/// host's input (`host_in`, what the host sends) and output (`host_out`),
/// the server's input (`server_in`, what the proxy writes it) and output
/// (`server_out`). Runs until the host's input or the server's output
/// ends. Then, when the host ended it, the server's input is closed first;
/// `stop_server` stops the server (for a child: a grace period, a kill, the
/// reaping) and its output is what `serve` returns; every request still
/// waiting on the server fails, and those answers reach the host before its
/// output is closed.
pub(crate) async fn serve<HR, HW, SW, SR, F, Fut>(
    session: Session,
    host_in: HR,
    host_out: HW,
    server_in: SW,
    server_out: SR,
    stop_server: F,
) -> Fut::Output
where
    HR: AsyncRead + Unpin + Send + 'static,
    HW: AsyncWrite + Unpin + Send + 'static,
    SW: AsyncWrite + Unpin + Send + 'static,
    SR: AsyncRead + Unpin + Send + 'static,
    F: FnOnce(EndedBy) -> Fut,
    Fut: Future,
{
    let host = Arc::new(Peer::start("host", host_out, session.max_pending, None));
    // A server that takes nothing written to it for as long as a call may
    // wait is written to no more (its stdin is closed).
    let server = Arc::new(Peer::start(
        "server",
        server_in,
        session.max_pending,
        Some(session.call_timeout),
    ));
    let upstream = Arc::new(Upstream::new(server.clone(), session.call_timeout));
    let shared = Arc::new(Shared {
        server_id: session.server_id,
        store: session.store,
        policy_name: session.policy_name,
        host: host.clone(),
        server: server.clone(),
        upstream,
        pipeline: OnceLock::new(),
        host_caps: OnceLock::new(),
        inflight: Mutex::new(HashMap::new()),
        relayed: Mutex::new(HashMap::new()),
        audit: session.audit,
        max_pending: session.max_pending,
        max_line_bytes: session.max_line_bytes,
        shape: session.shape,
        setup: Mutex::new(Some(Setup {
            baseline: session.baseline,
            approver: session.approver,
            hooks: session.hooks,
            protected: session.protected,
            state: session.state,
        })),
        relist: Mutex::default(),
    });
    server::watch_roots(&shared);
    let _timer = KeepTimer::start(session.call_timeout);
    let from_host = tokio::spawn(host::read(shared.clone(), host_in));
    let from_server = tokio::spawn(server::read(shared.clone(), server_out));
    let stopped = tokio::select! {
        _ = from_host => {
            tracing::info!(target: "mcppol::proxy", "the host closed the input: stopping the server");
            // The host will answer nothing more: what waits on it (an
            // approval, a server's request) fails now, and is decided
            // (and audited) as such before the end.
            host.close(closed("the host closed its input"));
            // Without waiting: a server whose queue is full (it reads
            // nothing) has its input closed now.
            server.close_now();
            stop_server(EndedBy::Host).await
        }
        _ = from_server => {
            // Every request still waiting on the server fails now.
            server.close(closed("the server exited"));
            stop_server(EndedBy::Server).await
        }
    };
    server.close(closed("the server exited"));
    // Nothing the proxy asked the host (an elicitation, the host's roots)
    // is waited for any more: the session is over.
    host.close(closed("the session ended"));
    // The requests that were waiting on the server answer the host (with
    // an error) before its output is closed; the few still running then
    // are given up and answered with an error.
    for _ in 0..200 {
        if Shared::lock(&shared.inflight).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    host::give_up(&shared).await;
    host.finish(Duration::from_secs(2)).await;
    stopped
}

/// A timer that always runs out before the deadline of any call made now
/// (it is set again every half call timeout), for as long as the session
/// runs. Tokio's time driver wakes itself (a write to its eventfd, one
/// more system call) whenever a timer is set earlier than the one it last
/// slept until, or while it sleeps with none: without this one, every
/// call's deadline would cost that write. Below 100 ms of call timeout it
/// is not worth its wake-ups, and none is kept.
struct KeepTimer(Option<tokio::task::JoinHandle<()>>);

impl KeepTimer {
    fn start(call_timeout: Duration) -> KeepTimer {
        let period = call_timeout / 2;
        if period < Duration::from_millis(50) {
            return KeepTimer(None);
        }
        KeepTimer(Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
            }
        })))
    }
}

impl Drop for KeepTimer {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Why a side closed.
fn closed(why: &str) -> McpError {
    McpError::Transport(why.to_string())
}

/// Builds the pipeline once the handshake has told what the host can do.
pub(crate) fn build_pipeline(shared: &Shared) -> Option<Arc<Pipeline>> {
    let setup = Shared::lock(&shared.setup).take()?;
    let caps = shared.host_caps.get().cloned().unwrap_or(Value::Null);
    let mut builder = Pipeline::builder(
        &shared.server_id,
        shared.upstream.clone(),
        shared.policy_source(),
    )
    .baseline(setup.baseline)
    .hooks(setup.hooks)
    // The server is a child on this machine: path tests read its links.
    .local_tool(true)
    .protect(setup.protected);
    if let Some(state) = setup.state {
        builder = builder
            .budgets(state.budgets)
            .grants(state.grants)
            .approved_listings(state.approved);
    }
    if let Some(command) = setup.approver {
        builder = builder.approver(approve::ProxyApprover::Command {
            command,
            host: shared.host.clone(),
        });
    } else if approve::host_elicits(&caps) {
        builder = builder.approver(approve::ProxyApprover::Elicit(shared.host.clone()));
    }
    #[cfg(feature = "otel")]
    let otel = crate::otel::active();
    #[cfg(not(feature = "otel"))]
    let otel = false;
    // One sink for the audit line and the decision span.
    if shared.audit.is_some() || otel {
        let audit = shared.audit.clone();
        builder = builder.audit(Arc::new(move |r| {
            #[cfg(feature = "otel")]
            crate::otel::note(r);
            match &audit {
                Some(audit) => audit.write_record(r),
                None => Ok(()),
            }
        }));
    }
    match builder.build() {
        Ok(p) => {
            let p = Arc::new(p);
            let _ = shared.pipeline.set(p.clone());
            Some(p)
        }
        Err(e) => {
            tracing::error!(target: "mcppol::proxy", error = %e, "the pipeline cannot be built");
            None
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod session_tests;
