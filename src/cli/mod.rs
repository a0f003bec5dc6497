//! The command line: one file a verb. Exit statuses: 0 success (for `eval`,
//! whatever the decision), 1 the input has errors (`check`, `fingerprint`),
//! 2 usage errors and policies that do not load (`eval`).

#[cfg(feature = "pipeline")]
mod background_log;
mod bundle;
#[cfg(all(feature = "pipeline", feature = "http"))]
mod bundle_source;
mod check;
mod claude_hook;
#[cfg(feature = "pipeline")]
mod enforcing;
mod eval;
mod explain;
mod files;
mod fingerprint;
mod fmt;
#[cfg(feature = "pipeline")]
mod gateway;
mod hook;
mod inputs;
mod listing;
mod lock;
#[cfg(feature = "pipeline")]
mod proxy;
mod request_args;
mod request_file;
#[cfg(feature = "http")]
mod serve;
#[cfg(feature = "pipeline")]
mod state;
mod table;
mod test;
#[cfg(feature = "pipeline")]
mod tools;
mod watch;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `--format` of the verbs that print for people (`human`) or for programs
/// (`json`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Exit statuses shared by the verbs.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
}

/// Policy-as-data for the tool calls AI agents make over MCP.
#[derive(Parser, Debug)]
#[command(name = "mcppol", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Decide one request against a policy and print the decision as JSON.
    Eval(Box<eval::EvalArgs>),
    /// Parse, compile and lint policy files and folders.
    Check(check::CheckArgs),
    /// Print the fingerprint of one `tools/list` entry.
    Fingerprint(fingerprint::FingerprintArgs),
    /// Show every rule considered for one request, why it matched or not,
    /// and the decision (same flags as `eval`).
    Explain(Box<explain::ExplainArgs>),
    /// Run policy test files (`*.mcppoltest`): each case a request and the
    /// decision it must get.
    Test(test::TestArgs),
    /// The effective decision for every listed tool, with and without an
    /// approver: the table a security review signs off.
    Table(table::TableArgs),
    /// Write the lock file of approved fingerprints from a `tools/list`
    /// listing, or with --check say what changed since.
    Lock(lock::LockArgs),
    /// Signed policy bundles: build one from a folder, verify it, inspect
    /// it, or make the key pair that signs it.
    Bundle(bundle::BundleArgs),
    /// Rewrite policy files in the one canonical layout (comments kept), or
    /// with --check list those that are not.
    Fmt(fmt::FmtArgs),
    #[cfg(feature = "pipeline")]
    /// Enforce a policy in front of a stdio MCP server: relay JSON-RPC
    /// between the host (stdin/stdout) and the server command after `--`.
    Proxy(Box<proxy::ProxyArgs>),
    #[cfg(feature = "pipeline")]
    /// One policy in front of every server of an `mcpServers` file, behind
    /// one MCP endpoint (stdio or streamable HTTP): tools named
    /// SERVER__TOOL, taint kept by the gateway.
    Gateway(Box<gateway::GatewayArgs>),
    #[cfg(feature = "pipeline")]
    /// Connect to an MCP server (a command after `--`, a server of a
    /// servers file, or a URL) and write its tools as the JSON that `check
    /// --tools`, `table` and `lock` read.
    Tools(tools::ToolsArgs),
    /// Claude Code's permission hook: decide a PreToolUse event read on
    /// stdin, record taint on PostToolUse, clear it on SessionEnd; or print
    /// the settings.json block that installs it.
    #[command(name = "claude-hook")]
    ClaudeHook(claude_hook::ClaudeHookArgs),
    /// The permission hook of an agent host (claude, codex, cursor,
    /// gemini, copilot, cline, goose, windsurf): decide its pre-tool event
    /// read on stdin and answer in the form the host blocks on, record
    /// taint on its post-tool events; or print the block that installs it.
    Hook(Box<hook::HookArgs>),
    /// The decision service: every host's hook over loopback HTTP
    /// (`POST /v1/hooks/HOST`), `POST /v1/decide` and `/v1/explain`, `GET
    /// /v1/status` and `/healthz`, policies hot-reloaded.
    #[cfg(feature = "http")]
    Serve(Box<serve::ServeArgs>),
}

/// The status when standard output is closed before everything is written
/// (a reader such as `head` that stopped early): 128 + SIGPIPE, what a
/// shell shows for other Unix tools stopped the same way.
pub const CLOSED_PIPE: u8 = 141;

/// Readable failures instead of a panic dump: a closed standard output
/// ends the run quietly (status [`CLOSED_PIPE`]); any other panic, which is
/// a bug, is reported in one plain message (with a backtrace only when
/// `RUST_BACKTRACE` asks for one) and ends with status 101.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        if message.contains("Broken pipe") {
            std::process::exit(i32::from(CLOSED_PIPE));
        }
        let place = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("error: mcppol stopped on an internal error: {message}{place}");
        eprintln!(
            "  help: this is a bug in mcppol; please report it with the command that caused it"
        );
        let trace = std::backtrace::Backtrace::capture();
        if trace.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("{trace}");
        }
    }));
}

/// Runs the command line and returns the exit status.
pub fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let status = match cli.command {
        Command::Eval(args) => eval::run(*args),
        Command::Check(args) => check::run(args),
        Command::Fingerprint(args) => fingerprint::run(args),
        Command::Explain(args) => explain::run(*args),
        Command::Test(args) => test::run(args),
        Command::Table(args) => table::run(args),
        Command::Lock(args) => lock::run(args),
        Command::Bundle(args) => bundle::run(args),
        Command::Fmt(args) => fmt::run(args),
        #[cfg(feature = "pipeline")]
        Command::Proxy(args) => proxy::run(*args),
        #[cfg(feature = "pipeline")]
        Command::Gateway(args) => gateway::run(*args),
        #[cfg(feature = "pipeline")]
        Command::Tools(args) => tools::run(args),
        Command::ClaudeHook(args) => claude_hook::run(args),
        Command::Hook(args) => hook::run(*args),
        #[cfg(feature = "http")]
        Command::Serve(args) => serve::run(*args),
    };
    ExitCode::from(status)
}

/// Whether diagnostics on stderr should be coloured.
pub(crate) fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

/// The help under a `--name` the file lacks: the likely name, when one of
/// the file's is close to it.
pub(crate) fn name_help(asked: &str, known: &[&str]) -> Option<String> {
    crate::diagnostics::did_you_mean(asked, known.iter().copied())
        .map(|k| format!("did you mean `--name {k}`?"))
}

/// A [`crate::PickError`] as a usage error, with a "did you mean" when the
/// name asked for is close to one the file has.
pub(crate) fn pick_error(e: &crate::PickError) -> u8 {
    let help = match e {
        crate::PickError::NotFound { name, known } => {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            name_help(name, &known)
        }
        _ => None,
    };
    usage_error(&e.to_string(), help.as_deref())
}

/// Prints a usage error (plain text, as clap does) and gives its status.
pub(crate) fn usage_error(message: &str, help: Option<&str>) -> u8 {
    eprintln!("error: {message}");
    if let Some(help) = help {
        eprintln!("  help: {help}");
    }
    exit::USAGE
}
