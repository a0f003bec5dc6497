//! `mcppol explain`: every rule the decision procedure considers for one
//! request, why each matched or not, and the decision.

use clap::Args;

use super::request_args::RequestArgs;
use super::{exit, usage_error, Format};
use crate::eval::explain::explain;

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// `human` (one line a step, `file:line:col:` first) or `json`.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

pub fn run(args: ExplainArgs) -> u8 {
    let owned = match args.request.request() {
        Ok(p) => p,
        Err(e) => return usage_error(&e, Some("see `mcppol explain --help`")),
    };
    let (_set, policy) = match args.request.load() {
        Ok(p) => p,
        Err(status) => return status,
    };
    let explanation = owned.with_request(|request| explain(&policy, request));
    match args.format {
        Format::Human => print!("{}", explanation.render(&policy)),
        // Names and values the request supplies, with their bidi and
        // invisible characters as `\u` escapes (JSON escapes the controls).
        Format::Json => println!(
            "{}",
            crate::escape::json_text(&explanation.to_json(&policy))
        ),
    }
    exit::OK
}
