//! One request as a JS caller states it (`{tool, args, taint, ...}`), read
//! from the JSON text the JS wrapper makes of it, and checked the way
//! `mcppol eval` checks its flags.
//!
//! The wrapper hands over JSON text rather than a JS object so that the
//! conversion is bounded: `JSON.stringify` refuses cycles, the text's size
//! is checked here before parsing, and serde_json refuses nesting deeper
//! than 128.

use mcppol::{fingerprint, Links, Lock, Request, TargetKind, ToolApproval};
use serde::Deserialize;
use serde_json::Value;

/// The most JSON text one request may take (arguments included): 16 MiB,
/// as much as `mcppol eval` reads from a file.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// The fields a caller may give. Unknown fields are refused, so a typo
/// (`tainted` for `taint`) is an error instead of a silently missing fact.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RequestInput {
    tool: Option<String>,
    resource: Option<String>,
    prompt: Option<String>,
    args: Option<Value>,
    annotations: Option<Value>,
    tool_def: Option<Value>,
    lock: Option<Value>,
    approval: Option<String>,
    #[serde(default)]
    taint: Vec<String>,
    #[serde(default)]
    taint_unknown: bool,
    principal: Option<String>,
    approver: Option<bool>,
    cwd: Option<String>,
    assigns: Option<Value>,
    #[serde(default)]
    trust_server: bool,
    #[serde(default)]
    local_tool: bool,
}

/// A checked request that owns its inputs; [`OwnedRequest::with_request`]
/// lends the engine's borrowed [`Request`].
#[derive(Debug)]
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
    cwd: Option<String>,
    has_approver: bool,
    approval: ToolApproval,
    trust_server: bool,
    local_tool: bool,
}

fn object(field: &str, value: Option<Value>) -> Result<Option<Value>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v)),
        Some(v) => Err(format!("`{field}` takes an object, not `{v}`")),
    }
}

fn approval_of(value: &str) -> Result<ToolApproval, String> {
    match value {
        "approved" => Ok(ToolApproval::Approved),
        "new" => Ok(ToolApproval::New),
        "changed" => Ok(ToolApproval::Changed),
        other => Err(format!(
            "`approval` takes \"approved\", \"new\" or \"changed\", not {other:?}"
        )),
    }
}

/// Reads one request from the JSON text of the caller's object.
pub fn parse(json: &str) -> Result<OwnedRequest, String> {
    if json.len() > MAX_REQUEST_BYTES {
        return Err(format!(
            "the request is {} bytes of JSON, more than the {MAX_REQUEST_BYTES} allowed; \
             pass smaller arguments",
            json.len()
        ));
    }
    let input: RequestInput = serde_json::from_str(json).map_err(|e| format!("{e}"))?;
    build(input)
}

fn build(input: RequestInput) -> Result<OwnedRequest, String> {
    let (kind, target) = match (input.tool, input.resource, input.prompt) {
        (Some(t), None, None) => (TargetKind::Tool, t),
        (None, Some(r), None) => (TargetKind::Resource, r),
        (None, None, Some(p)) => (TargetKind::Prompt, p),
        (None, None, None) => {
            return Err("name what is asked: `tool`, `resource` or `prompt`".into())
        }
        _ => return Err("give one of `tool`, `resource` and `prompt`, not several".into()),
    };
    let field = kind.as_str();
    let (server, name) = match target.split_once('/') {
        Some((s, n)) if !s.is_empty() && !n.is_empty() => (s.to_string(), n.to_string()),
        _ => {
            return Err(format!(
                "`{field}` takes \"SERVER/NAME\" (split at the first `/`), not `{target}`"
            ))
        }
    };
    let args = object("args", input.args)?.unwrap_or_else(|| Value::Object(Default::default()));
    let mut annotations = None;
    let mut current = None;
    if let Some(def) = object("toolDef", input.tool_def)? {
        if def.get("name").and_then(Value::as_str) != Some(name.as_str()) {
            return Err(format!(
                "`toolDef`: its `name` must be `{name}`, the tool named by `{field}`"
            ));
        }
        current = Some(fingerprint(&def).map_err(|e| format!("`toolDef`: {e}"))?);
        annotations = def.get("annotations").cloned();
    }
    if let Some(a) = object("annotations", input.annotations)? {
        annotations = Some(a);
    }
    let lock = match input.lock {
        // The lock file's JSON text, as Python's `lock` takes it.
        Some(Value::String(text)) => Some(text),
        other => object("lock", other)?.map(|lock| lock.to_string()),
    };
    let approval = match (input.approval, lock) {
        (Some(_), Some(_)) => {
            return Err(
                "give `approval` or `lock`, not both: `approval` states the tool's \
                        standing, a lock computes it"
                    .into(),
            )
        }
        (Some(a), None) => approval_of(&a)?,
        (None, None) => ToolApproval::Approved,
        (None, Some(_)) if current.is_none() => {
            return Err(
                "`lock` needs `toolDef`: the lock's fingerprints are compared with the \
                        tool's current definition, and without one every locked tool would \
                        look changed; give the tool's `tools/list` entry as `toolDef`"
                    .into(),
            )
        }
        (None, Some(lock)) => Lock::parse(&lock)
            .map_err(|e| format!("`lock`: {e}"))?
            .approval(&server, &name, current.as_deref()),
    };
    Ok(OwnedRequest {
        kind,
        server,
        name,
        args,
        annotations,
        assigns: object("assigns", input.assigns)?,
        taint: input.taint,
        taint_unknown: input.taint_unknown,
        principal: input.principal,
        cwd: input.cwd,
        has_approver: input.approver.unwrap_or(true) && kind == TargetKind::Tool,
        approval,
        trust_server: input.trust_server,
        local_tool: input.local_tool,
    })
}

impl OwnedRequest {
    /// Runs `f` with the engine's request borrowed from these inputs.
    pub fn with_request<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        let taint: Vec<&str> = self.taint.iter().map(String::as_str).collect();
        let mut request = Request::new(self.kind, &self.server, &self.name)
            .with_args(&self.args)
            .with_taint(&taint)
            .with_approval(self.approval)
            .with_trusted_server(self.trust_server);
        if let Some(a) = &self.annotations {
            request = request.with_annotations(a);
        }
        if let Some(a) = &self.assigns {
            request = request.with_assigns(a);
        }
        if let Some(p) = &self.principal {
            request = request.with_principal(p);
        }
        if let Some(c) = &self.cwd {
            request = request.with_cwd(c);
        }
        if self.taint_unknown {
            request = request.with_taint_unknown();
        }
        if !self.has_approver {
            request = request.without_approver();
        }
        if self.local_tool {
            request = request.with_links(Links::ThisMachine);
        }
        f(&request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_with_everything() {
        let r = parse(
            r#"{"tool":"gh/create_issue","args":{"t":1},"taint":["web"],
                "principal":"dana","approver":false,"cwd":"/srv"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        r.with_request(|req| {
            assert_eq!((req.server, req.name), ("gh", "create_issue"));
            assert_eq!(req.taint, &["web"]);
            assert_eq!(req.principal, Some("dana"));
            assert!(!req.has_approver);
            assert_eq!(req.cwd, Some("/srv"));
        });
    }

    #[test]
    fn bad_input_is_named() {
        let cases = [
            (r#"{"tol":"a/b"}"#, "unknown field `tol`"),
            (r#"{}"#, "name what is asked"),
            (r#"{"tool":"a/b","prompt":"a/c"}"#, "not several"),
            (r#"{"tool":"nobody"}"#, "SERVER/NAME"),
            (r#"{"tool":"a/b","args":[1]}"#, "`args` takes an object"),
            (r#"{"tool":"a/b","lock":{}}"#, "`lock` needs `toolDef`"),
            (r#"{"tool":"a/b","toolDef":{"name":"c"}}"#, "must be `b`"),
            (r#"{"tool":"a/b","approval":"maybe"}"#, "`approval` takes"),
            (r#"{"tool":"a/b","approval":"new","lock":"{}"}"#, "not both"),
            (r#"{"tool":"a/b","lock":"{}"}"#, "`lock` needs `toolDef`"),
            (r#"{"tool":"a/b","lock":[1]}"#, "`lock` takes an object"),
        ];
        for (json, want) in cases {
            let err = parse(json).err().unwrap_or_else(|| panic!("{json} parsed"));
            assert!(err.contains(want), "{json}: {err}");
        }
    }

    #[test]
    fn deep_or_large_input_is_refused() {
        let deep = format!(
            r#"{{"tool":"a/b","args":{{"x":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let err = parse(&deep).err().unwrap_or_else(|| panic!("deep parsed"));
        assert!(err.contains("recursion limit"), "{err}");
        let large = format!(
            r#"{{"tool":"a/b","args":{{"x":"{}"}}}}"#,
            "y".repeat(MAX_REQUEST_BYTES)
        );
        let err = parse(&large)
            .err()
            .unwrap_or_else(|| panic!("large parsed"));
        assert!(err.contains("more than the"), "{err}");
    }

    #[test]
    fn approval_is_stated_or_computed_from_a_lock() {
        let stated =
            parse(r#"{"tool":"a/b","approval":"changed"}"#).unwrap_or_else(|e| panic!("{e}"));
        stated.with_request(|req| assert_eq!(req.approval, ToolApproval::Changed));
        let def = r#"{"name":"b","inputSchema":{"type":"object"}}"#;
        let locked = format!(
            r#"{{"tool":"a/b","toolDef":{def},"lock":"{{\"version\":1,\"tools\":{{}}}}"}}"#
        );
        let text = parse(&locked).unwrap_or_else(|e| panic!("{e}"));
        text.with_request(|req| assert_eq!(req.approval, ToolApproval::New));
    }

    #[test]
    fn resources_and_prompts_have_no_approver() {
        let r = parse(r#"{"resource":"fs/file:///a"}"#).unwrap_or_else(|e| panic!("{e}"));
        r.with_request(|req| assert!(!req.approver_available()));
    }
}
