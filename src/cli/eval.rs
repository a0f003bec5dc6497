//! `mcppol eval`: decide one request (given by flags, or as JSON with
//! `--request`) or a batch of them (`--request` with JSON lines) and print
//! each decision as one JSON line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use super::request_args::RequestArgs;
use super::request_file::{host_key, parse_requests, ByHost, MAX_REQUEST_BYTES};
use super::{exit, usage_error};
use crate::enforce::render::decision_json;
use crate::Policy;

#[derive(Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Read the request as JSON from FILE (`-`: standard input) instead of
    /// the request flags: one object whose fields mirror them (`tool`,
    /// `args`, `tool_def`, `no_approver`, ...), or JSON lines, one request
    /// a line, decided as a batch (one decision a line).
    #[arg(
        long = "request",
        value_name = "FILE|-",
        conflicts_with_all = [
            "tool", "resource", "prompt", "args", "annotations", "tool_def", "taint",
            "principal", "assigns", "no_approver", "lock", "trust_server", "host",
        ]
    )]
    pub request_file: Option<String>,
}

pub fn run(args: EvalArgs) -> u8 {
    if let Some(input) = &args.request_file {
        return run_batch(&args.request, input);
    }
    let flags = &args.request;
    if flags.tool.is_none() && flags.resource.is_none() && flags.prompt.is_none() {
        return usage_error(
            "name a request: --tool, --resource or --prompt, or --request FILE|- for JSON",
            Some("see `mcppol eval --help`"),
        );
    }
    let owned = match args.request.request() {
        Ok(p) => p,
        Err(e) => return usage_error(&e, Some("see `mcppol eval --help`")),
    };
    let (_set, policy) = match args.request.load() {
        Ok(p) => p,
        Err(status) => return status,
    };
    let decision = owned.with_request(|request| policy.decide(request));
    println!("{}", decision_json(&decision));
    exit::OK
}

/// `--request FILE|-`: read every request first (a mistake anywhere is a
/// usage error and nothing is printed), then decide each, one line each.
fn run_batch(flags: &RequestArgs, input: &str) -> u8 {
    let help = Some("see `mcppol eval --help` and docs/cli.md");
    let (text, origin) = if input == "-" {
        match crate::io::read_stdin(MAX_REQUEST_BYTES) {
            Ok(t) => (t, "standard input".to_string()),
            Err(e) => return usage_error(&format!("--request: {e}"), help),
        }
    } else {
        let path = PathBuf::from(input);
        match crate::io::read_text(&path, MAX_REQUEST_BYTES, "request file") {
            Ok(t) => (t, input.to_string()),
            Err(e) => return usage_error(&format!("--request: {e}"), help),
        }
    };
    let requests = match parse_requests(&text, &origin, Path::new("")) {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("--request: {e}"), help),
    };
    let mut loaded: ByHost<Arc<Policy>> = ByHost::new();
    let mut out = String::new();
    for r in &requests {
        let key = host_key(&r.host);
        let policy = match loaded.get(&key) {
            Some(p) => Arc::clone(p),
            None => {
                let (_, policy) = match flags.load_with(&r.host) {
                    Ok(p) => p,
                    Err(status) => return status,
                };
                loaded.insert(key, Arc::clone(&policy));
                policy
            }
        };
        let decision = r.request.with_request(|request| policy.decide(request));
        out.push_str(&decision_json(&decision).to_string());
        out.push('\n');
    }
    print!("{out}");
    exit::OK
}
