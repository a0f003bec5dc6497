//! `mcppol eval`: decide one request and print the decision as JSON.

use std::path::PathBuf;

use clap::{ArgGroup, Args};
use serde_json::Value;

use super::inputs::{json_arg, json_object_arg, split_target};
use super::{color, exit, usage_error};
use crate::fingerprint::{fingerprint, Lock, ToolApproval};
use crate::{HostPredicates, LoadOptions, PolicySet, Request};

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("target").required(true).args(["tool", "resource", "prompt"])))]
pub struct EvalArgs {
    /// The policy file.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Which policy of the file (needed when it holds several).
    #[arg(long, value_name = "POLICY")]
    name: Option<String>,
    /// A tool call: SERVER/TOOL (split at the first `/`).
    #[arg(long, value_name = "SERVER/NAME")]
    tool: Option<String>,
    /// A resource read: SERVER/URI.
    #[arg(long, value_name = "SERVER/URI")]
    resource: Option<String>,
    /// A prompt get: SERVER/NAME.
    #[arg(long, value_name = "SERVER/NAME")]
    prompt: Option<String>,
    /// The call's arguments, a JSON object (or @FILE).
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// The tool's MCP annotations object (or @FILE). Overrides the
    /// annotations of --tool-def.
    #[arg(long, value_name = "JSON")]
    annotations: Option<String>,
    /// The tool's whole `tools/list` entry (JSON or @FILE): its annotations
    /// and current fingerprint.
    #[arg(long = "tool-def", value_name = "JSON")]
    tool_def: Option<String>,
    /// A server whose output is already in the model's context (repeat).
    #[arg(long, value_name = "SERVER")]
    taint: Vec<String>,
    /// Who the call is made for.
    #[arg(long, value_name = "P")]
    principal: Option<String>,
    /// Host data for `assigns.KEY`, a JSON object (or @FILE).
    #[arg(long, value_name = "JSON")]
    assigns: Option<String>,
    /// The caller has no approver: nothing can be asked.
    #[arg(long = "no-approver")]
    no_approver: bool,
    /// Approved fingerprints: {"version": 1, "tools": {"server/tool": "sha256:..."}}.
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// The host trusts this server's annotations.
    #[arg(long = "trust-server")]
    trust_server: bool,
    /// The value of a host predicate: NAME=true, NAME=false or NAME=error
    /// (repeat). Unset host predicates fail closed.
    #[arg(long = "host", value_name = "NAME=VALUE")]
    host: Vec<String>,
}

/// Everything a request borrows, owned for the length of the command.
struct Owned {
    server: String,
    name: String,
    args: Value,
    annotations: Option<Value>,
    assigns: Option<Value>,
    approval: ToolApproval,
}

fn host_predicates(specs: &[String]) -> Result<Option<HostPredicates>, String> {
    if specs.is_empty() {
        return Ok(None);
    }
    let mut registry = HostPredicates::new();
    for spec in specs {
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| format!("--host takes NAME=true|false|error, not `{spec}`"))?;
        let result: Result<bool, String> = match value {
            "true" => Ok(true),
            "false" => Ok(false),
            "error" => Err("set to fail by --host".to_string()),
            other => {
                return Err(format!(
                    "--host {name}: `{other}` is not true, false or error"
                ))
            }
        };
        registry.register(name, move |_| result.clone());
    }
    Ok(Some(registry))
}

fn prepare(args: &EvalArgs) -> Result<(crate::TargetKind, Owned), String> {
    let (kind, flag, text) = match (&args.tool, &args.resource, &args.prompt) {
        (Some(t), _, _) => (crate::TargetKind::Tool, "--tool", t),
        (_, Some(r), _) => (crate::TargetKind::Resource, "--resource", r),
        (_, _, Some(p)) => (crate::TargetKind::Prompt, "--prompt", p),
        _ => return Err("name a request: --tool, --resource or --prompt".into()),
    };
    let (server, name) = split_target(flag, text)?;
    let call_args = match &args.args {
        Some(a) => json_object_arg("--args", a)?,
        None => Value::Object(Default::default()),
    };
    let tool_def = args
        .tool_def
        .as_deref()
        .map(|t| json_arg("--tool-def", t))
        .transpose()?;
    let mut current = None;
    let mut annotations = None;
    if let Some(def) = &tool_def {
        if def.get("name").and_then(Value::as_str) != Some(name) {
            return Err(format!(
                "--tool-def: its `name` must be `{name}`, the tool named by {flag}"
            ));
        }
        current = Some(fingerprint(def).map_err(|e| format!("--tool-def: {e}"))?);
        annotations = def.get("annotations").cloned();
    }
    if let Some(a) = &args.annotations {
        annotations = Some(json_object_arg("--annotations", a)?);
    }
    let assigns = args
        .assigns
        .as_deref()
        .map(|a| json_object_arg("--assigns", a))
        .transpose()?;
    let approval = match &args.lock {
        None => ToolApproval::Approved,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--lock: cannot read `{}`: {e}", path.display()))?;
            let lock =
                Lock::parse(&text).map_err(|e| format!("--lock `{}`: {e}", path.display()))?;
            lock.approval(server, name, current.as_deref())
        }
    };
    Ok((
        kind,
        Owned {
            server: server.to_string(),
            name: name.to_string(),
            args: call_args,
            annotations,
            assigns,
            approval,
        },
    ))
}

pub fn run(args: EvalArgs) -> u8 {
    let (kind, owned) = match prepare(&args) {
        Ok(p) => p,
        Err(e) => return usage_error(&e, Some("see `mcppol eval --help`")),
    };
    let host = match host_predicates(&args.host) {
        Ok(h) => h,
        Err(e) => return usage_error(&e, None),
    };
    let options = LoadOptions { host };
    let set = match PolicySet::from_file(&args.policy, &options) {
        Ok(set) => set,
        Err(e) => {
            eprint!("{}", e.render(color()));
            return exit::USAGE;
        }
    };
    let policy = match set.pick(args.name.as_deref()) {
        Ok(p) => p,
        Err(e) => return usage_error(&e.to_string(), None),
    };
    let taint: Vec<&str> = args.taint.iter().map(String::as_str).collect();
    let mut request = Request {
        kind,
        server: &owned.server,
        name: &owned.name,
        args: Some(&owned.args),
        annotations: owned.annotations.as_ref(),
        taint: &taint,
        principal: args.principal.as_deref(),
        assigns: owned.assigns.as_ref(),
        has_approver: !args.no_approver,
        approval: owned.approval,
        server_trusted: args.trust_server,
    };
    if kind != crate::TargetKind::Tool {
        request.has_approver = false;
    }
    let decision = policy.decide(&request);
    let mut out = decision.to_json();
    if let Value::Object(map) = &mut out {
        map.insert("policy".into(), Value::String(policy.name.clone()));
        if let Some(span) = decision.rule_span {
            map.insert(
                "line".into(),
                Value::from(policy.source.line_col(span.start).0),
            );
        }
    }
    println!("{out}");
    exit::OK
}
