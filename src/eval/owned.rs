//! Owned request inputs: what `mcppol eval`, `explain`, `table` and policy
//! tests state about one request, turned into a [`Request`] the same way
//! everywhere.

use serde_json::Value;

use super::Request;
use crate::fingerprint::{fingerprint, Lock, ToolApproval};
use crate::model::HostPredicates;
use crate::paths::Links;
use crate::syntax::TargetKind;

/// Every input of one request, as a caller states it (the flags of
/// `mcppol eval`, or one case of a policy test).
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    /// `tool`, `resource` or `prompt`, and `SERVER/NAME`.
    pub kind: Option<TargetKind>,
    pub target: String,
    pub args: Option<Value>,
    pub annotations: Option<Value>,
    pub tool_def: Option<Value>,
    pub taint: Vec<String>,
    pub principal: Option<String>,
    pub assigns: Option<Value>,
    pub no_approver: bool,
    pub lock: Option<Lock>,
    pub trust_server: bool,
    /// The working folder `$CWD` roots stand for and relative paths are
    /// placed against.
    pub cwd: Option<String>,
    /// The host could not tell the taint: `tainted` fails closed.
    pub taint_unknown: bool,
    /// The tool acts on this machine: path tests resolve its symbolic
    /// links (unless the policy sets `resolve_links off`).
    pub local_tool: bool,
}

/// The value a host predicate is given by `--host NAME=VALUE`.
pub type HostValue = Result<bool, String>;

/// An owned request: borrow a [`Request`] from it with
/// [`OwnedRequest::with_request`].
#[derive(Debug, Clone)]
pub struct OwnedRequest {
    pub kind: TargetKind,
    pub server: String,
    pub name: String,
    pub args: Value,
    pub annotations: Option<Value>,
    pub assigns: Option<Value>,
    pub taint: Vec<String>,
    pub principal: Option<String>,
    pub has_approver: bool,
    pub approval: ToolApproval,
    pub trust_server: bool,
    pub cwd: Option<String>,
    pub taint_unknown: bool,
    pub local_tool: bool,
}

fn flag_of(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Tool => "tool",
        TargetKind::Resource => "resource",
        TargetKind::Prompt => "prompt",
    }
}

/// `SERVER/NAME` split at the first `/`.
pub fn split_target<'a>(what: &str, text: &'a str) -> Result<(&'a str, &'a str), String> {
    match text.split_once('/') {
        Some((server, name)) if !server.is_empty() && !name.is_empty() => Ok((server, name)),
        _ => Err(format!("{what} takes SERVER/NAME, not `{text}`")),
    }
}

impl RequestSpec {
    /// Checks the inputs and builds the request: the tool definition's name
    /// must be the tool's, and it gives the annotations (unless stated) and
    /// the current fingerprint that the lock is compared with.
    pub fn build(&self, prefix: &str) -> Result<OwnedRequest, String> {
        let kind = self
            .kind
            .ok_or("name a request: tool, resource or prompt")?;
        let what = format!("{prefix}{}", flag_of(kind));
        let (server, name) = split_target(&what, &self.target)?;
        let args = match &self.args {
            Some(a) if a.is_object() => a.clone(),
            Some(a) => return Err(format!("{prefix}args takes a JSON object, not `{a}`")),
            None => Value::Object(Default::default()),
        };
        if self.lock.is_some() && self.tool_def.is_none() {
            let tool_def = if prefix == "--" {
                "--tool-def"
            } else {
                "tool_def"
            };
            return Err(format!(
                "{prefix}lock needs {tool_def}: the lock's fingerprints are compared with the \
                 tool's current definition, and without one every locked tool would look \
                 changed; give the tool's `tools/list` entry with {tool_def}"
            ));
        }
        let mut current = None;
        let mut annotations = None;
        if let Some(def) = &self.tool_def {
            if def.get("name").and_then(Value::as_str) != Some(name) {
                return Err(format!(
                    "{prefix}tool-def: its `name` must be `{name}`, the tool named by {what}"
                ));
            }
            current = Some(fingerprint(def).map_err(|e| format!("{prefix}tool-def: {e}"))?);
            annotations = def.get("annotations").cloned();
        }
        if let Some(a) = &self.annotations {
            if !a.is_object() {
                return Err(format!(
                    "{prefix}annotations takes a JSON object, not `{a}`"
                ));
            }
            annotations = Some(a.clone());
        }
        if let Some(a) = &self.assigns {
            if !a.is_object() {
                return Err(format!("{prefix}assigns takes a JSON object, not `{a}`"));
            }
        }
        let approval = match &self.lock {
            None => ToolApproval::Approved,
            Some(lock) => lock.approval(server, name, current.as_deref()),
        };
        Ok(OwnedRequest {
            kind,
            server: server.to_string(),
            name: name.to_string(),
            args,
            annotations,
            assigns: self.assigns.clone(),
            taint: self.taint.clone(),
            principal: self.principal.clone(),
            has_approver: !self.no_approver && kind == TargetKind::Tool,
            approval,
            trust_server: self.trust_server,
            cwd: self.cwd.clone(),
            taint_unknown: self.taint_unknown,
            local_tool: self.local_tool,
        })
    }
}

impl OwnedRequest {
    /// Runs `f` with the request borrowed from these inputs.
    pub fn with_request<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        let taint: Vec<&str> = self.taint.iter().map(String::as_str).collect();
        let request = Request {
            kind: self.kind,
            server: &self.server,
            name: &self.name,
            args: Some(&self.args),
            annotations: self.annotations.as_ref(),
            taint: &taint,
            taint_unknown: self.taint_unknown,
            cwd: self.cwd.as_deref(),
            links: if self.local_tool {
                Links::ThisMachine
            } else {
                Links::Off
            },
            principal: self.principal.as_deref(),
            assigns: self.assigns.as_ref(),
            has_approver: self.has_approver,
            approval: self.approval,
            server_trusted: self.trust_server,
        };
        f(&request)
    }
}

/// Parses `NAME=true|false|error`.
pub fn parse_host_value(spec: &str) -> Result<(String, HostValue), String> {
    let (name, value) = spec
        .split_once('=')
        .ok_or_else(|| format!("host takes NAME=true|false|error, not `{spec}`"))?;
    let result = match value {
        "true" => Ok(true),
        "false" => Ok(false),
        "error" => Err("set to fail by --host".to_string()),
        other => {
            return Err(format!(
                "host {name}: `{other}` is not true, false or error"
            ))
        }
    };
    Ok((name.to_string(), result))
}

/// A registry of host predicates with fixed values; `None` when none are
/// given (then `host.NAME` loads and fails closed).
pub fn fixed_host_predicates(values: &[(String, HostValue)]) -> Option<HostPredicates> {
    if values.is_empty() {
        return None;
    }
    let mut registry = HostPredicates::new();
    for (name, result) in values {
        let result = result.clone();
        registry.register(name.clone(), move |_| result.clone());
    }
    Some(registry)
}
