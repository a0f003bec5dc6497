//! `mcppol eval`: decide one request and print the decision as JSON.

use clap::Args;

use super::request_args::RequestArgs;
use super::{exit, usage_error};

#[derive(Args, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    pub request: RequestArgs,
}

pub fn run(args: EvalArgs) -> u8 {
    let owned = match args.request.request() {
        Ok(p) => p,
        Err(e) => return usage_error(&e, Some("see `mcppol eval --help`")),
    };
    let (_set, policy) = match args.request.load() {
        Ok(p) => p,
        Err(status) => return status,
    };
    let decision = owned.with_request(|request| policy.decide(request));
    let out = decision.to_json();
    println!("{out}");
    exit::OK
}
