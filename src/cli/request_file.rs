//! `mcppol eval --request FILE|-`: requests as JSON, one object whose
//! fields mirror `eval`'s flags, or a batch of them (JSON lines, or any
//! whitespace-separated sequence of objects), decided one after another,
//! one decision a line.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::eval::owned::{HostValue, OwnedRequest, RequestSpec};
use crate::fingerprint::Lock;
use crate::TargetKind;

/// The most requests one `--request` input may hold.
pub const MAX_REQUESTS: usize = 100_000;
/// The most bytes one `--request` input may have.
pub const MAX_REQUEST_BYTES: u64 = 64 * 1024 * 1024;

/// One request as JSON: the flags of `eval`, by the same names (`-` as
/// `_`). Unknown fields are an error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestJson {
    tool: Option<String>,
    resource: Option<String>,
    prompt: Option<String>,
    args: Option<Value>,
    annotations: Option<Value>,
    tool_def: Option<Value>,
    #[serde(default)]
    taint: Vec<String>,
    principal: Option<String>,
    assigns: Option<Value>,
    #[serde(default)]
    no_approver: bool,
    /// A lock file's path, a whole lock (`{"version": 1, "tools": {...}}`)
    /// or just its `tools` map.
    lock: Option<Value>,
    #[serde(default)]
    trust_server: bool,
    /// The working folder `$CWD` roots stand for.
    cwd: Option<String>,
    /// The taint could not be told: every `tainted` test fails closed.
    #[serde(default)]
    taint_unknown: bool,
    /// The tool acts on this machine: its symbolic links are resolved.
    #[serde(default)]
    local_tool: bool,
    /// Host predicate values: `{"NAME": true | false | "error"}`.
    #[serde(default)]
    host: BTreeMap<String, Value>,
}

/// One request read from the input, ready to decide.
#[derive(Debug)]
pub struct FileRequest {
    pub request: OwnedRequest,
    /// The host predicate values it gives, sorted by name.
    pub host: Vec<(String, HostValue)>,
}

fn lock_of(value: &Value, base: &Path) -> Result<Lock, String> {
    match value {
        Value::String(path) => super::request_args::read_lock("lock", &base.join(path)),
        Value::Object(map) => {
            let whole = if map.contains_key("version") {
                value.clone()
            } else {
                serde_json::json!({"version": 1, "tools": value})
            };
            Lock::parse(&whole.to_string()).map_err(|e| format!("lock: {e}"))
        }
        other => Err(format!(
            "lock takes a lock file's path or a lock object, not `{other}`"
        )),
    }
}

fn host_of(host: &BTreeMap<String, Value>) -> Result<Vec<(String, HostValue)>, String> {
    host.iter()
        .map(|(name, v)| {
            let value = match v {
                Value::Bool(b) => Ok(*b),
                Value::String(s) if s == "error" => Err("set to fail by the request".to_string()),
                other => {
                    return Err(format!(
                        "host `{name}`: `{other}` is not true, false or \"error\""
                    ))
                }
            };
            Ok((name.clone(), value))
        })
        .collect()
}

impl RequestJson {
    fn build(self, base: &Path) -> Result<FileRequest, String> {
        let (kind, target) = match (self.tool, self.resource, self.prompt) {
            (Some(t), None, None) => (TargetKind::Tool, t),
            (None, Some(r), None) => (TargetKind::Resource, r),
            (None, None, Some(p)) => (TargetKind::Prompt, p),
            (None, None, None) => {
                return Err("name the request: one of `tool`, `resource` or `prompt`".into())
            }
            _ => return Err("give only one of `tool`, `resource` and `prompt`".into()),
        };
        let spec = RequestSpec {
            kind: Some(kind),
            target,
            args: self.args,
            annotations: self.annotations,
            tool_def: self.tool_def,
            taint: self.taint,
            principal: self.principal,
            assigns: self.assigns,
            no_approver: self.no_approver,
            lock: self.lock.as_ref().map(|l| lock_of(l, base)).transpose()?,
            trust_server: self.trust_server,
            cwd: self.cwd,
            taint_unknown: self.taint_unknown,
            local_tool: self.local_tool,
        };
        let request = spec.build("")?;
        Ok(FileRequest {
            request,
            host: host_of(&self.host)?,
        })
    }
}

/// Counts lines as the reading moves forward (linear in the input).
struct Lines<'t> {
    text: &'t str,
    offset: usize,
    line: usize,
}

impl Lines<'_> {
    /// 1-based line of `offset`, which never goes back.
    fn at(&mut self, offset: usize) -> usize {
        if let Some(between) = self.text.get(self.offset..offset) {
            self.line += between.bytes().filter(|b| *b == b'\n').count();
            self.offset = offset;
        }
        self.line
    }
}

/// Reads every request of `text`: JSON objects separated by white space
/// (one object, or JSON lines). `origin` names the input in messages;
/// paths in `lock` are taken from `base`. The first bad request stops the
/// reading, with its number and line.
pub fn parse_requests(text: &str, origin: &str, base: &Path) -> Result<Vec<FileRequest>, String> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut lines = Lines {
        text,
        offset: 0,
        line: 1,
    };
    loop {
        let start = stream.byte_offset();
        let Some(next) = stream.next() else { break };
        let number = out.len() + 1;
        // Where the value starts: past the white space before it.
        let skipped = text
            .get(start..)
            .map_or(0, |rest| rest.len() - rest.trim_start().len());
        let line = lines.at(start + skipped);
        let at = format!("{origin}:{line}: request {number}");
        if number > MAX_REQUESTS {
            return Err(format!(
                "{origin}: more than {MAX_REQUESTS} requests, the most one input may hold: split it"
            ));
        }
        let value = next.map_err(|e| format!("{at}: not JSON: {e}"))?;
        if !value.is_object() {
            return Err(format!("{at}: a request is a JSON object, not `{value}`"));
        }
        let request: RequestJson =
            serde_json::from_value(value).map_err(|e| format!("{at}: {e}"))?;
        out.push(request.build(base).map_err(|e| format!("{at}: {e}"))?);
    }
    if out.is_empty() {
        return Err(format!("{origin} holds no request"));
    }
    Ok(out)
}

/// The policies loaded for each distinct set of host values, so that a
/// batch loads the file once per set rather than once per request.
pub type ByHost<T> = HashMap<Vec<(String, Option<bool>)>, T>;

/// The cache key of a set of host values.
pub fn host_key(host: &[(String, HostValue)]) -> Vec<(String, Option<bool>)> {
    host.iter()
        .map(|(name, v)| (name.clone(), v.as_ref().ok().copied()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<FileRequest>, String> {
        parse_requests(text, "in", Path::new("."))
    }

    #[test]
    fn one_object_over_several_lines() {
        let r = parse("{\n  \"tool\": \"fs/read\",\n  \"args\": {\"path\": \"/a\"}\n}\n").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].request.name, "read");
        assert_eq!(r[0].request.args["path"], "/a");
    }

    #[test]
    fn json_lines_are_a_batch() {
        let r = parse(
            "{\"tool\": \"a/b\"}\n{\"prompt\": \"d/p\", \"no_approver\": true}\n\n{\"resource\": \"f/file:///x\", \"host\": {\"h\": \"error\"}}\n",
        )
        .unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].request.kind, TargetKind::Prompt);
        assert!(!r[1].request.has_approver);
        assert_eq!(r[2].host.len(), 1);
        assert!(r[2].host[0].1.is_err());
    }

    #[test]
    fn mistakes_name_the_request_and_line() {
        let e = parse("{\"tool\": \"a/b\"}\n{\"tol\": \"a/b\"}\n").unwrap_err();
        assert!(e.starts_with("in:2: request 2: unknown field `tol`"), "{e}");
        let e = parse("{\"tool\": \"a/b\", \"prompt\": \"c/d\"}").unwrap_err();
        assert!(e.contains("only one of"), "{e}");
        let e = parse("[1]").unwrap_err();
        assert!(e.contains("a request is a JSON object"), "{e}");
        let e = parse("{\"tool\": \"a/b\"} {").unwrap_err();
        assert!(e.starts_with("in:1: request 2: not JSON"), "{e}");
        let e = parse("  \n").unwrap_err();
        assert!(e.contains("holds no request"), "{e}");
        let e = parse("{\"tool\": \"a/b\", \"host\": {\"h\": 1}}").unwrap_err();
        assert!(e.contains("not true, false"), "{e}");
        let e = parse("{\"tool\": \"a/b\", \"lock\": {}}").unwrap_err();
        assert!(e.contains("lock needs tool_def"), "{e}");
    }

    #[test]
    fn a_lock_may_be_inline() {
        let r = parse(
            r#"{"tool": "a/b", "tool_def": {"name": "b"}, "lock": {"a/c": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}}"#,
        )
        .unwrap();
        assert_eq!(r[0].request.approval, crate::fingerprint::ToolApproval::New);
    }
}
