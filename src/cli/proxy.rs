//! `mcppol proxy`: enforce a policy in front of any stdio MCP server (see
//! `docs/proxy.md`). Exit status: the server's (128 + the signal when a
//! signal ended it), 2 for usage errors and policies that do not load, 127
//! when the server cannot be started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::background_log::{Background, Flush};
#[cfg(feature = "http")]
use super::bundle_source;
use super::enforcing::{self, Enforcing, Files};
use super::{color, exit, usage_error};
use crate::mcp::DEFAULT_MAX_LINE_BYTES;
use crate::proxy::{self, Config, Session};
use crate::servers::{ServerTransport, Servers};
use crate::store::Store;
use crate::LoadOptions;

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// The policy file (watched: an edit takes effect on the next request).
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
    /// The server's id, as the policy's rules name it (`ID/tool`); with
    /// --servers, NAME by default.
    #[arg(long = "server-id", value_name = "ID")]
    server_id: Option<String>,
    /// A servers file (the `mcpServers` object hosts use) to take the
    /// server's command, arguments, environment and folder from, instead
    /// of `-- COMMAND` (for a launcher that mangles `--`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "server",
        conflicts_with = "command"
    )]
    servers: Option<PathBuf>,
    /// The server of --servers to run.
    #[arg(long, value_name = "NAME", requires = "servers")]
    server: Option<String>,
    /// Approved fingerprints; without it, the first listing is approved.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Append one JSON line per governed request to FILE.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Settles asks: run with `sh -c`, the request as JSON on stdin; prints
    /// allow_once, allow_always, deny or deny_and_halt.
    #[arg(long, value_name = "COMMAND")]
    approver: Option<String>,
    /// Claude Code style command hooks (`PreToolUse`, `PostToolUse`) from a
    /// settings file, run in the pipeline (docs/claude-code.md).
    #[arg(long, value_name = "FILE")]
    hooks: Option<PathBuf>,
    /// How long the server has to exit after the host closes the input.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = humantime::parse_duration)]
    grace: Duration,
    /// How long the server has to answer a governed request.
    #[arg(long = "call-timeout", value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    call_timeout: Duration,
    /// The longest JSON-RPC line read from the host or the server.
    #[arg(long = "max-line-bytes", value_name = "N", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
    /// The most requests in flight each way.
    #[arg(long = "max-pending", value_name = "N", default_value_t = 1024)]
    max_pending: usize,
    /// Relay tool results as the server sent them: no stripping of
    /// invisible characters, no media placeholders, no size cap.
    #[arg(long = "no-shape")]
    no_shape: bool,
    /// The cap of a tool result shaped for the model (bytes of JSON).
    #[arg(long = "max-result-bytes", value_name = "N", default_value_t = crate::pipeline::DEFAULT_MAX_RESULT_BYTES)]
    max_result_bytes: usize,
    /// Where the budgets' counters and the grants (`allow always`) live:
    /// `redis://HOST:PORT/DB` shares them with every proxy, gateway and
    /// `serve` that names that Redis (see docs/fleet.md); without it, this
    /// process's memory.
    #[arg(long, value_name = "URL")]
    state: Option<String>,
    /// Export one span per governed request, and the decision metrics, to
    /// this OpenTelemetry collector (OTLP over HTTP: its base URL, such as
    /// `http://127.0.0.1:4318`); without it, `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (docs/fleet.md).
    #[cfg(feature = "otel")]
    #[arg(long = "otlp-endpoint", value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// The server command and its arguments (or --servers FILE --server
    /// NAME).
    #[arg(
        last = true,
        required_unless_present = "servers",
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// Log lines on stderr through `tracing`; `MCPPOL_LOG` sets the level
/// (`error`, `warn`, `info`, the default, `debug`, `trace`).
pub(super) fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(color())
        .with_max_level(log_level())
        .try_init();
}

fn log_level() -> tracing::Level {
    std::env::var("MCPPOL_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO)
}

/// [`init_logging`], with the lines written to stderr by a thread of their
/// own (`background_log.rs`): no call waits for stderr. What is queued is
/// written when the returned guard is dropped, at the command's end.
fn init_background_logging() -> Option<Flush> {
    let Some((lines, flush)) = Background::start(std::io::stderr()) else {
        init_logging();
        return None;
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(lines)
        .with_ansi(color())
        .with_max_level(log_level())
        .try_init();
    Some(flush)
}

/// Warns on stderr when no rule, `tools {}` pattern or setting of the
/// policy names the server id: every call would then be `no_rule`, and
/// the visibility filter would hide nothing (a misspelt `--server-id`).
pub(super) fn warn_unnamed_server(policy: &crate::Policy, name: &str, server_id: &str) {
    let names = policy.server_names();
    if names.names(server_id) {
        return;
    }
    let named = if names.written.is_empty() {
        "none".to_string()
    } else {
        names
            .written
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let hint = names
        .closest(server_id)
        .map(|c| format!("; did you mean `--server-id {c}`?"))
        .unwrap_or_default();
    eprintln!(
        "warning: no rule, `tools {{}}` pattern or setting of policy `{name}` names the server id `{server_id}` (it names: {named}): every call will be decided by the default (`no_rule`) and nothing is hidden{hint}"
    );
}

/// Opens the policy file and picks the policy `--name` names (or the only
/// one); the usage error's status otherwise.
fn open_store(policy: &std::path::Path, name: Option<&str>) -> Result<(Arc<Store>, String), u8> {
    let store = match Store::open([policy], LoadOptions::default()) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("{}", e.render(color()));
            return Err(exit::USAGE);
        }
    };
    let names = store.names();
    let name = match (name, names.as_slice()) {
        (Some(n), _) if names.iter().any(|k| k == n) => n.to_string(),
        (Some(n), _) => {
            return Err(usage_error(
                &format!("`{}` holds no policy `{n}`", policy.display()),
                Some(
                    &super::name_help(n, &names.iter().map(String::as_str).collect::<Vec<_>>())
                        .unwrap_or_else(|| format!("it holds: {}", names.join(", "))),
                ),
            ))
        }
        (None, [only]) => only.clone(),
        (None, _) => {
            return Err(usage_error(
                &format!("`{}` holds several policies", policy.display()),
                Some(&format!("pick one with --name ({})", names.join(", "))),
            ))
        }
    };
    Ok((store, name))
}

/// How to start the server: `-- COMMAND`, or an entry of a servers file.
struct Launch {
    server_id: String,
    command: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
}

/// The server to start and its id, from `-- COMMAND` and `--server-id`, or
/// from `--servers FILE --server NAME` (the id NAME unless `--server-id`
/// says otherwise); a remote server is the gateway's.
fn launch(args: &mut ProxyArgs) -> Result<Launch, (String, Option<String>)> {
    let (Some(path), Some(name)) = (&args.servers, &args.server) else {
        let server_id = args.server_id.take().ok_or((
            "--server-id is needed with `-- COMMAND`".to_string(),
            Some("name the server as the policy's rules do: --server-id ID".to_string()),
        ))?;
        return Ok(Launch {
            server_id,
            command: std::mem::take(&mut args.command),
            env: BTreeMap::new(),
            cwd: None,
        });
    };
    let file = Servers::read(path).map_err(|e| (format!("--servers: {e}"), None))?;
    let spec = file
        .get(name)
        .map_err(|e| (format!("--servers `{}`: {e}", path.display()), None))?;
    let server_id = args.server_id.take().unwrap_or_else(|| spec.id.clone());
    match &spec.transport {
        ServerTransport::Stdio {
            command,
            args: command_args,
            env,
            cwd,
        } => Ok(Launch {
            server_id,
            command: std::iter::once(command.clone())
                .chain(command_args.iter().cloned())
                .collect(),
            env: env.clone(),
            cwd: cwd.clone(),
        }),
        ServerTransport::Http { .. } => Err((
            format!("server `{name}` is a remote (HTTP) server: `mcppol proxy` runs stdio servers"),
            Some(format!(
                "govern a remote server with `mcppol gateway --servers {} ...`",
                path.display()
            )),
        )),
    }
}

/// The store and the policy's name of a relaying front door (the proxy,
/// the gateway): from `--policy` (watched), or from `--bundle` (polled on
/// `runtime`).
pub(super) fn open_policies(
    runtime: &tokio::runtime::Runtime,
    policy: Option<&std::path::Path>,
    name: Option<&str>,
    #[cfg(feature = "http")] bundle: &bundle_source::BundleFlags,
) -> Result<(Arc<Store>, String), u8> {
    #[cfg(feature = "http")]
    if let Some(url) = &bundle.bundle {
        let (store, feed) = bundle_source::open(runtime, url, bundle)?;
        let name = bundle_source::pick_name(&store, url, name)?;
        bundle_source::start_polling(runtime, feed, Arc::clone(&store));
        return Ok((store, name));
    }
    let _ = runtime;
    match policy {
        Some(policy) => open_store(policy, name),
        None => Err(usage_error("give --policy FILE or --bundle URL", None)),
    }
}

pub fn run(mut args: ProxyArgs) -> u8 {
    // Kept to the end: every line logged is written before the exit.
    let _flush = init_background_logging();
    let launch = match launch(&mut args) {
        Ok(l) => l,
        Err((message, help)) => return usage_error(&message, help.as_deref()),
    };
    if !crate::fingerprint::is_server_id(&launch.server_id) {
        return usage_error(
            &format!("--server-id `{}` is not a server id", launch.server_id),
            Some("a server id is a non-empty name without `/`"),
        );
    }
    // One thread: a call crosses no thread from the host's pipe to the
    // server's and back (blocking work, such as an approver or a command
    // hook, runs on tokio's blocking pool as before). Built first: a
    // bundle's first fetch runs on it, and its feed polls on it.
    let runtime = match tokio::runtime::Builder::new_current_thread()
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
        warn_unnamed_server(&policy, &name, &launch.server_id);
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
        servers: args.servers.as_deref(),
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
    // The Redis connection manager runs on this runtime.
    let state = {
        let _entered = runtime.enter();
        super::state::open(args.state.as_deref())
    };
    let state = match state {
        Ok((_, None)) => None,
        Ok((budgets, Some(shared))) => Some(proxy::SharedState {
            budgets,
            grants: shared.grants,
            approved: shared.approved,
        }),
        Err(e) => return usage_error(&e, None),
    };
    let config = Config {
        session: Session {
            server_id: launch.server_id,
            store,
            policy_name: name,
            baseline,
            audit,
            approver: args.approver,
            hooks,
            max_line_bytes: args.max_line_bytes,
            max_pending: args.max_pending.max(1),
            call_timeout: args.call_timeout,
            shape: (!args.no_shape).then_some(args.max_result_bytes),
            protected,
            state,
        },
        command: launch.command,
        env: launch.env,
        cwd: launch.cwd,
        grace: args.grace,
    };
    let status = runtime.block_on(proxy::run(config));
    // Tasks still blocked on the host's input do not hold the exit up.
    runtime.shutdown_timeout(Duration::from_millis(100));
    status
}
