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
    if let Some(why) = protected(&args, &owned) {
        // The hook's fixed rule, before any policy rule.
        let d = crate::Decision::protected();
        match args.format {
            Format::Human => print!(
                "protected: matched: {} (the fixed rule of `mcppol claude-hook`: no policy rule is considered)\ndecision: {} (source: {}, reason: {}, rule_id: null)\n",
                crate::escape::escape(&why),
                d.decision.as_str(),
                d.source.as_str(),
                d.reason.as_str()
            ),
            Format::Json => println!(
                "{}",
                serde_json::json!({
                    "policy": policy.name.as_str(),
                    "steps": [{"stage": "protected", "rule_id": null, "outcome": "matched", "detail": why}],
                    "not_considered": policy.all_rules().count(),
                    "decision": d.to_json(),
                })
            ),
        }
        return exit::OK;
    }
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

/// Why `claude-hook` would refuse this request by its fixed rule, if it
/// would: a built-in tool of the `claude` server that writes the policy
/// being explained, the `.mcppoltest` and lock files beside it or the
/// default state folder (see `crate::protected`).
fn protected(args: &ExplainArgs, owned: &crate::eval::owned::OwnedRequest) -> Option<String> {
    use crate::claude::{names::DEFAULT_BUILTIN_SERVER, place, protected_write, HookConfig};
    if owned.kind != crate::TargetKind::Tool || owned.server != DEFAULT_BUILTIN_SERVER {
        return None;
    }
    let config = HookConfig::new(&args.request.policy);
    let cwd = owned.cwd.as_deref();
    let home = config.home.as_deref();
    let input = match place::place_input(&owned.name, &owned.args, cwd.unwrap_or(""), home) {
        Ok(input) => input,
        Err(_) => return None,
    };
    protected_write(
        &config.protected(),
        &config.policy,
        &owned.name,
        &input,
        cwd,
        home,
    )
}
