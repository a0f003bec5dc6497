//! The keyword arguments of `decide` and `explain`, read into an owned
//! request the same way `mcppol eval` reads its flags (`RequestSpec` of the
//! command line): one target, the tool definition checked against it and
//! giving the annotations and the fingerprint that a lock is compared with,
//! no approver for a resource read or a prompt get.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;

use mcppol::{Links, Lock, Request, TargetKind, ToolApproval};

use crate::convert::to_json_object;
use crate::error::RequestError;

/// The keywords `decide` and `explain` take besides `tool`.
pub const KEYWORDS: &[&str] = &[
    "resource",
    "prompt",
    "args",
    "annotations",
    "tool_def",
    "lock",
    "approval",
    "taint",
    "taint_unknown",
    "principal",
    "assigns",
    "approver",
    "trust_server",
    "cwd",
    "local_tool",
];

/// The most servers `taint` may name.
pub const MAX_TAINT: usize = 1024;

/// Every input of one request, owned, so that deciding can run without
/// the GIL.
pub struct OwnedRequest {
    kind: TargetKind,
    server: String,
    name: String,
    args: Value,
    annotations: Option<Value>,
    assigns: Option<Value>,
    taint: Vec<String>,
    taint_unknown: bool,
    principal: Option<String>,
    has_approver: bool,
    approval: ToolApproval,
    trust_server: bool,
    cwd: Option<String>,
    local_tool: bool,
}

/// The keywords given, read in one pass over the dict (a `None` value is
/// a keyword not given).
struct Given<'py> {
    slots: [Option<Bound<'py, PyAny>>; KEYWORDS.len()],
}

impl<'py> Given<'py> {
    fn read(kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let mut slots: [Option<Bound<'py, PyAny>>; KEYWORDS.len()] = Default::default();
        if let Some(k) = kwargs {
            for (key, value) in k.iter() {
                let key = key.str()?;
                let key = key.to_cow()?;
                let Some(i) = KEYWORDS.iter().position(|known| *known == key) else {
                    return Err(RequestError::new_err(format!(
                        "unknown keyword {key:?}; known: tool, {}",
                        KEYWORDS.join(", ")
                    )));
                };
                if !value.is_none() {
                    slots[i] = Some(value);
                }
            }
        }
        Ok(Given { slots })
    }

    fn get(&self, key: &str) -> Option<Bound<'py, PyAny>> {
        let i = KEYWORDS.iter().position(|known| *known == key)?;
        self.slots.get(i).cloned().flatten()
    }
}

fn text(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    value
        .cast::<PyString>()
        .map_err(|_| RequestError::new_err(format!("{key} takes a str")))?
        .to_cow()
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| RequestError::new_err(format!("{key}: {e}")))
}

fn boolean(key: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value
        .extract::<bool>()
        .map_err(|_| RequestError::new_err(format!("{key} takes True or False")))
}

/// `SERVER/NAME` split at the first `/`.
fn split_target(key: &str, target: &str) -> PyResult<(String, String)> {
    match target.split_once('/') {
        Some((server, name)) if !server.is_empty() && !name.is_empty() => {
            Ok((server.to_string(), name.to_string()))
        }
        _ => Err(RequestError::new_err(format!(
            "{key} takes \"SERVER/NAME\" (split at the first `/`), not {target:?}"
        ))),
    }
}

fn approval_of(value: &Bound<'_, PyAny>) -> PyResult<ToolApproval> {
    match text("approval", value)?.as_str() {
        "approved" => Ok(ToolApproval::Approved),
        "new" => Ok(ToolApproval::New),
        "changed" => Ok(ToolApproval::Changed),
        other => Err(RequestError::new_err(format!(
            "approval takes \"approved\", \"new\" or \"changed\", not {other:?}"
        ))),
    }
}

fn lock_of(value: &Bound<'_, PyAny>) -> PyResult<Lock> {
    // A dict (the lock file's JSON, read by the caller) or the JSON text.
    let text = if let Ok(s) = value.cast::<PyString>() {
        s.to_cow()?.to_string()
    } else {
        to_json_object("lock", value)?.to_string()
    };
    Lock::parse(&text).map_err(|e| RequestError::new_err(format!("lock: {e}")))
}

impl OwnedRequest {
    /// Reads the request from `tool` and the keyword arguments.
    pub fn from_python(tool: Option<&str>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let given = Given::read(kwargs)?;
        let resource = given.get("resource");
        let prompt = given.get("prompt");
        let (kind, key, target) = match (tool, &resource, &prompt) {
            (Some(t), None, None) => (TargetKind::Tool, "tool", t.to_string()),
            (None, Some(r), None) => (TargetKind::Resource, "resource", text("resource", r)?),
            (None, None, Some(p)) => (TargetKind::Prompt, "prompt", text("prompt", p)?),
            (None, None, None) => {
                return Err(RequestError::new_err(
                    "name a request: tool=\"SERVER/TOOL\", resource=\"SERVER/URI\" or prompt=\"SERVER/NAME\"",
                ))
            }
            _ => {
                return Err(RequestError::new_err(
                    "name one request: tool, resource or prompt, not several",
                ))
            }
        };
        let (server, name) = split_target(key, &target)?;
        let args = match given.get("args") {
            Some(a) => to_json_object("args", &a)?,
            None => Value::Object(Default::default()),
        };
        let tool_def = given
            .get("tool_def")
            .map(|d| to_json_object("tool_def", &d))
            .transpose()?;
        let mut annotations = None;
        let mut current = None;
        if let Some(def) = &tool_def {
            if def.get("name").and_then(Value::as_str) != Some(name.as_str()) {
                return Err(RequestError::new_err(format!(
                    "tool_def: its \"name\" must be {name:?}, the tool named by {key}"
                )));
            }
            current = Some(
                mcppol::fingerprint(def)
                    .map_err(|e| RequestError::new_err(format!("tool_def: {e}")))?,
            );
            annotations = def.get("annotations").cloned();
        }
        if let Some(a) = given.get("annotations") {
            annotations = Some(to_json_object("annotations", &a)?);
        }
        let assigns = given
            .get("assigns")
            .map(|a| to_json_object("assigns", &a))
            .transpose()?;
        let lock = given.get("lock").map(|l| lock_of(&l)).transpose()?;
        let approval = match (given.get("approval"), &lock) {
            (Some(_), Some(_)) => {
                return Err(RequestError::new_err(
                    "give approval or lock, not both: approval states the tool's standing, a lock computes it",
                ))
            }
            (Some(a), None) => approval_of(&a)?,
            (None, Some(lock)) => {
                if current.is_none() {
                    return Err(RequestError::new_err(
                        "lock needs tool_def: the lock's fingerprints are compared with the tool's \
                         current definition, and without one every locked tool would look changed; \
                         give the tool's `tools/list` entry with tool_def",
                    ));
                }
                lock.approval(&server, &name, current.as_deref())
            }
            (None, None) => ToolApproval::Approved,
        };
        let taint = match given.get("taint") {
            None => Vec::new(),
            Some(t) => taint_of(&t)?,
        };
        let approver = given
            .get("approver")
            .map(|a| boolean("approver", &a))
            .transpose()?
            .unwrap_or(true);
        let get_bool = |key: &str| -> PyResult<bool> {
            Ok(given
                .get(key)
                .map(|v| boolean(key, &v))
                .transpose()?
                .unwrap_or(false))
        };
        let get_text = |key: &str| -> PyResult<Option<String>> {
            given.get(key).map(|v| text(key, &v)).transpose()
        };
        Ok(OwnedRequest {
            kind,
            server,
            name,
            args,
            annotations,
            assigns,
            taint,
            taint_unknown: get_bool("taint_unknown")?,
            principal: get_text("principal")?,
            has_approver: approver && kind == TargetKind::Tool,
            approval,
            trust_server: get_bool("trust_server")?,
            cwd: get_text("cwd")?,
            local_tool: get_bool("local_tool")?,
        })
    }

    /// Runs `f` with the request borrowed from these inputs.
    pub fn with_request<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        let taint: Vec<&str> = self.taint.iter().map(String::as_str).collect();
        let mut request = Request::new(self.kind, &self.server, &self.name);
        request.args = Some(&self.args);
        request.annotations = self.annotations.as_ref();
        request.taint = &taint;
        request.taint_unknown = self.taint_unknown;
        request.cwd = self.cwd.as_deref();
        request.links = if self.local_tool {
            Links::ThisMachine
        } else {
            Links::Off
        };
        request.principal = self.principal.as_deref();
        request.assigns = self.assigns.as_ref();
        request.has_approver = self.has_approver;
        request.approval = self.approval;
        request.server_trusted = self.trust_server;
        f(&request)
    }
}

/// `taint`: an iterable of server ids (a lone str is refused: it would
/// read as one server a letter).
fn taint_of(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyString>() {
        return Err(RequestError::new_err(
            "taint takes a list of server ids, not one str; write taint=[\"web\"]",
        ));
    }
    let mut out = Vec::new();
    for item in value
        .try_iter()
        .map_err(|_| RequestError::new_err("taint takes a list of server ids"))?
    {
        if out.len() >= MAX_TAINT {
            return Err(RequestError::new_err(format!(
                "taint names more than {MAX_TAINT} servers; name only those whose output is in the model's context"
            )));
        }
        out.push(text("taint item", &item?)?);
    }
    Ok(out)
}
