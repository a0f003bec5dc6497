//! `mcppol gateway`: one policy in front of every server of a servers file,
//! behind one MCP endpoint (see `docs/gateway.md`). Exit status: 0 when the
//! host closed its input, 128 + the signal when a signal ended it, 2 for
//! usage errors and policies or servers files that do not load.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

#[cfg(feature = "http")]
use super::bundle_source;
use super::enforcing::{self, Enforcing, Files};
use super::proxy::{init_logging, open_policies};
use super::usage_error;
use crate::gateway::{self, Config, DEFAULT_SEPARATOR};
use crate::mcp::DEFAULT_MAX_LINE_BYTES;
use crate::servers::Servers;

#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The policy file (watched: an edit takes effect on the next request,
    /// for every server at once).
    #[cfg_attr(
        feature = "http",
        arg(long, value_name = "FILE", required_unless_present = "bundle")
    )]
    #[cfg_attr(not(feature = "http"), arg(long, value_name = "FILE", required = true))]
    policy: Option<PathBuf>,
    /// `--bundle URL --bundle-pub PEM [--bundle-poll SECS]`.
    #[cfg(feature = "http")]
    #[command(flatten)]
    bundle: super::bundle_source::BundleFlags,
    /// Which policy of the file (needed when it holds several).
    #[arg(long, value_name = "POLICY")]
    name: Option<String>,
    /// The servers: an `mcpServers` file as Claude Desktop and Claude Code
    /// write it; each key is the server's id in the policy.
    #[arg(long, value_name = "FILE")]
    servers: PathBuf,
    /// Serve one host over stdin and stdout.
    #[cfg_attr(
        feature = "http",
        arg(long, required_unless_present = "listen", conflicts_with = "listen")
    )]
    #[cfg_attr(not(feature = "http"), arg(long, required = true))]
    stdio: bool,
    /// Serve hosts over streamable HTTP at ADDR (`127.0.0.1:8080`; a bare
    /// port listens on 127.0.0.1), endpoint `/mcp`.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// With --listen: an `Origin` allowed besides this machine's
    /// (`https://app.example.com`; repeat).
    #[cfg(feature = "http")]
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    allow_origin: Vec<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (`127.0.0.1:9464`;
    /// a bare port listens on 127.0.0.1).
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// With --listen: the most sessions at once.
    #[cfg(feature = "http")]
    #[arg(long = "max-sessions", value_name = "N", default_value_t = 64)]
    max_sessions: usize,
    /// With --listen: a session with no request for this long is ended.
    #[cfg(feature = "http")]
    #[arg(long = "session-idle", value_name = "DURATION", default_value = "30m", value_parser = humantime::parse_duration)]
    session_idle: Duration,
    /// With --listen: bearer tokens (a tokens file of SHA-256 digests, each
    /// with its principal and assigns); without a known token, 401.
    #[cfg(feature = "http")]
    #[arg(
        long,
        value_name = "FILE",
        requires = "listen",
        conflicts_with = "jwks"
    )]
    tokens: Option<PathBuf>,
    /// With --listen: JWTs verified against this JWKS (a file or an
    /// https URL); needs --issuer and --audience.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "FILE_OR_URL", requires_all = ["listen", "issuer", "audience"])]
    jwks: Option<String>,
    /// The JWTs' `iss`.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "ISS", requires = "jwks")]
    issuer: Option<String>,
    /// The JWTs' `aud`.
    #[cfg(feature = "http")]
    #[arg(long, value_name = "AUD", requires = "jwks")]
    audience: Option<String>,
    /// Between a server id and a tool or prompt name in the host's listing.
    #[arg(long, value_name = "S", default_value = DEFAULT_SEPARATOR)]
    separator: String,
    /// Approved fingerprints; without it, each server's first listing is
    /// approved.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Append one JSON line per governed request to FILE.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Settles asks: run with `sh -c`, the request as JSON on stdin; prints
    /// allow_once, allow_always, deny or deny_and_halt.
    #[arg(long, value_name = "COMMAND")]
    approver: Option<String>,
    /// Claude Code style command hooks from a settings file, run in every
    /// server's pipeline.
    #[arg(long, value_name = "FILE")]
    hooks: Option<PathBuf>,
    /// How long a server has to exit after its input is closed.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    grace: Duration,
    /// How long a server has to answer `initialize` when it starts.
    #[arg(long = "start-timeout", value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    start_timeout: Duration,
    /// How often a remote (HTTP) server is sent `ping`; one that does not
    /// answer within --ping-timeout is marked down and reconnected (`0s`:
    /// never).
    #[arg(long = "ping-interval", value_name = "DURATION", default_value = "15s", value_parser = humantime::parse_duration)]
    ping_interval: Duration,
    /// How long a remote server has to answer a `ping`.
    #[arg(long = "ping-timeout", value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    ping_timeout: Duration,
    /// How long a server has to answer a request.
    #[arg(long = "call-timeout", value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    call_timeout: Duration,
    /// The longest JSON-RPC line read from the host or a server.
    #[arg(long = "max-line-bytes", value_name = "N", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// The most requests in flight each way.
    #[arg(long = "max-pending", value_name = "N", default_value_t = 1024)]
    max_pending: usize,
    /// Where replicas share state: `redis://HOST:PORT/DB` keeps the
    /// budgets' counters, the grants and the taint in that Redis (see
    /// docs/fleet.md); without it, this process's memory.
    #[arg(long, value_name = "URL")]
    state: Option<String>,
    /// How long the taint of a host that speaks 2026-07-28 (no session)
    /// is kept after its last result: it is its principal's.
    #[arg(long = "taint-ttl", value_name = "DURATION", default_value = "8h", value_parser = humantime::parse_duration)]
    taint_ttl: Duration,
    /// Export one span per governed request, and the decision metrics, to
    /// this OpenTelemetry collector (OTLP over HTTP: its base URL, such as
    /// `http://127.0.0.1:4318`); without it, `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (docs/fleet.md).
    #[cfg(feature = "otel")]
    #[arg(long = "otlp-endpoint", value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// Relay tool results as the servers sent them.
    #[arg(long = "no-shape")]
    no_shape: bool,
    /// The cap of a tool result shaped for the model (bytes of JSON).
    #[arg(long = "max-result-bytes", value_name = "N", default_value_t = crate::pipeline::DEFAULT_MAX_RESULT_BYTES)]
    max_result_bytes: usize,
}

/// Warns once per server id that no rule, pattern or setting of the policy
/// names: its calls would all be `no_rule`, and nothing of it hidden.
fn warn_unnamed_servers(policy: &crate::Policy, name: &str, ids: &[&str]) {
    let names = policy.server_names();
    for id in ids.iter().filter(|id| !names.names(id)) {
        eprintln!(
            "warning: no rule, `tools {{}}` pattern or setting of policy `{name}` names the server `{id}` of the servers file: its calls will be decided by the default (`no_rule`) and none of its tools is hidden"
        );
    }
}

/// `--listen`'s address: `HOST:PORT`, or a bare port on 127.0.0.1.
#[cfg(feature = "http")]
fn listen_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("--listen `{text}` is not an address: give HOST:PORT (`127.0.0.1:8080`) or a port")
    })
}

pub fn run(args: GatewayArgs) -> u8 {
    init_logging();
    let servers = match Servers::read(&args.servers) {
        Ok(s) => s.servers,
        Err(e) => return usage_error(&format!("--servers {e}"), None),
    };
    if servers.is_empty() {
        return usage_error(
            &format!("--servers `{}` names no server", args.servers.display()),
            Some("add one under `mcpServers`"),
        );
    }
    let ids: Vec<&str> = servers.iter().map(|s| s.id.as_str()).collect();
    if let Err(e) = gateway::check_names(&ids, &args.separator) {
        return usage_error(&e, None);
    }
    // Built first: a bundle's first fetch runs on it, and its feed polls on
    // it.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("cannot start the runtime: {e}"), None),
    };
    let (store, name) = match open_policies(
        &runtime,
        args.policy.as_deref(),
        args.name.as_deref(),
        #[cfg(feature = "http")]
        &args.bundle,
    ) {
        Ok(opened) => opened,
        Err(status) => return status,
    };
    if let Some(policy) = store.get(&name) {
        warn_unnamed_servers(&policy, &name, &ids);
    }
    #[cfg(feature = "otel")]
    let _otel = match crate::otel::install(args.otlp_endpoint.as_deref(), &store, &name) {
        Ok(guard) => guard,
        Err(e) => return usage_error(&e, None),
    };
    let files = Files {
        policy: args.policy.as_deref(),
        lock: args.lock.as_deref(),
        audit: args.audit.as_deref(),
        hooks: args.hooks.as_deref(),
        servers: Some(&args.servers),
    };
    let Enforcing {
        baseline,
        audit,
        hooks,
        protected,
    } = match enforcing::set_up(&store, &files) {
        Ok(e) => e,
        Err(status) => return status,
    };
    #[cfg(feature = "http")]
    let protected = bundle_source::protect_local(&args.bundle, protected);
    let config = Config {
        servers,
        store,
        policy_name: name,
        baseline,
        audit,
        approver: args.approver,
        hooks,
        separator: args.separator,
        max_line_bytes: args.max_line_bytes,
        max_pending: args.max_pending.max(1),
        call_timeout: args.call_timeout,
        start_timeout: args.start_timeout,
        ping_interval: args.ping_interval,
        ping_timeout: args.ping_timeout,
        grace: args.grace,
        shape: (!args.no_shape).then_some(args.max_result_bytes),
        protected,
        principal: None,
        assigns: None,
        taint_ttl: args.taint_ttl,
        taint: None,
        session: None,
        budgets: Arc::new(crate::MemoryBudgets::new()),
        shared: None,
        #[cfg(feature = "http")]
        metrics: None,
    };
    #[cfg(feature = "http")]
    let metrics_addr = match args.metrics.as_deref().map(listen_addr).transpose() {
        Ok(a) => a,
        Err(e) => return usage_error(&e.replace("--listen", "--metrics"), None),
    };
    #[cfg(feature = "http")]
    let mut config = config;
    #[cfg(feature = "http")]
    if metrics_addr.is_some() {
        config.metrics = Some(Arc::new(gateway::metrics::Metrics::new(
            config.store.clone(),
            config.policy_name.clone(),
        )));
    }
    // The Redis connection manager runs on this runtime.
    let state = {
        let _entered = runtime.enter();
        super::state::open(args.state.as_deref())
    };
    let mut config = config;
    match state {
        Ok((budgets, shared)) => {
            config.budgets = budgets;
            config.shared = shared;
        }
        Err(e) => return usage_error(&e, None),
    }
    #[cfg(feature = "http")]
    if let (Some(addr), Some(metrics)) = (metrics_addr, config.metrics.clone()) {
        if let Err(e) = runtime.block_on(gateway::metrics::serve(metrics, addr)) {
            return usage_error(&e, None);
        }
    }
    #[cfg(feature = "http")]
    if let Some(listen) = &args.listen {
        let addr = match listen_addr(listen) {
            Ok(a) => a,
            Err(e) => return usage_error(&e, None),
        };
        let tokens = args.tokens.clone();
        let jwt = match (&args.jwks, &args.issuer, &args.audience) {
            (Some(j), Some(i), Some(a)) => Some(crate::http_auth::JwtConfig::new(j, i, a)),
            _ => None,
        };
        let status = runtime.block_on(async move {
            let auth = match (tokens, jwt) {
                (Some(path), _) => match crate::http_auth::TokenFile::read(&path) {
                    Ok(t) => Some(crate::http_auth::Authenticator::Tokens(t)),
                    Err(e) => return usage_error(&format!("--tokens: {e}"), None),
                },
                (None, Some(jwt)) => match crate::http_auth::JwtVerifier::new(jwt).await {
                    Ok(v) => Some(crate::http_auth::Authenticator::Jwt(v)),
                    Err(e) => return usage_error(&format!("--jwks: {e}"), None),
                },
                (None, None) => None,
            };
            let http = gateway::http::HttpConfig {
                addr,
                allowed_origins: args.allow_origin,
                max_sessions: args.max_sessions.max(1),
                idle: args.session_idle,
                auth,
            };
            gateway::http::run(config, http).await
        });
        runtime.shutdown_timeout(Duration::from_millis(100));
        return status;
    }
    let status = runtime.block_on(gateway::run_stdio(config));
    // Tasks still blocked on the host's input do not hold the exit up.
    runtime.shutdown_timeout(Duration::from_millis(100));
    status
}
