//! Reading a host's event: bounded string fields, arguments that come as
//! an object or as a JSON string, and the readings of a tool name whose
//! server and tool are joined by a separator that may occur in either.

use serde_json::{Map, Value};

use crate::claude::event::{MAX_FIELD_BYTES, MAX_TOOL_NAME_BYTES};
use crate::claude::names::{Reading, ToolName};

/// An event object, by field.
pub type Fields = Map<String, Value>;

/// A string field that must be there, non-empty and at most `max` bytes.
/// `event` names the event in the error.
pub fn string<'a>(
    fields: &'a Fields,
    key: &str,
    max: usize,
    event: &str,
) -> Result<&'a str, String> {
    match fields.get(key) {
        Some(Value::String(s)) if s.is_empty() => {
            Err(format!("the {event} event's `{key}` is empty"))
        }
        Some(Value::String(s)) if s.len() > max => Err(format!(
            "the {event} event's `{key}` is longer than {max} bytes"
        )),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("the {event} event's `{key}` is not a string")),
        None => Err(format!("the {event} event has no `{key}`")),
    }
}

/// A session id field (bounded like every id).
pub fn session<'a>(fields: &'a Fields, key: &str, event: &str) -> Result<&'a str, String> {
    string(fields, key, MAX_FIELD_BYTES, event)
}

/// A tool name field.
pub fn tool_name<'a>(fields: &'a Fields, key: &str, event: &str) -> Result<&'a str, String> {
    string(fields, key, MAX_TOOL_NAME_BYTES, event)
}

/// A working folder field; missing is `None`, anything else wrong an error.
pub fn optional_cwd<'a>(
    fields: &'a Fields,
    key: &str,
    event: &str,
) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => string(fields, key, MAX_FIELD_BYTES, event).map(Some),
    }
}

/// The one workspace root of `roots` (a JSON array of strings), when there
/// is exactly one: a host with several roots gives no single `$CWD`, and
/// relative paths then fail closed.
pub fn single_root<'a>(
    fields: &'a Fields,
    key: &str,
    event: &str,
) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(roots)) => match roots.as_slice() {
            [Value::String(s)] if !s.is_empty() && s.len() <= MAX_FIELD_BYTES => Ok(Some(s)),
            [Value::String(_)] => Err(format!(
                "the {event} event's `{key}` holds an empty or over-long path"
            )),
            [_] => Err(format!(
                "the {event} event's `{key}` is not a list of strings"
            )),
            _ => Ok(None),
        },
        Some(_) => Err(format!("the {event} event's `{key}` is not a list")),
    }
}

/// An object field of `fields`.
pub fn object<'a>(fields: &'a Fields, key: &str, event: &str) -> Result<&'a Fields, String> {
    match fields.get(key) {
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(format!("the {event} event's `{key}` is not a JSON object")),
        None => Err(format!("the {event} event has no `{key}`")),
    }
}

/// A tool's arguments: a JSON object, or a string holding one (some hosts
/// send them so). A missing field is `{}` only when `missing_is_empty`.
pub fn arguments(
    fields: &Fields,
    key: &str,
    event: &str,
    missing_is_empty: bool,
) -> Result<Value, String> {
    match fields.get(key) {
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(format!(
                "the {event} event's `{key}` is a JSON string that does not hold a JSON object"
            )),
            Err(e) => Err(format!(
                "the {event} event's `{key}` is a string that is not JSON: {e}"
            )),
        },
        None | Some(Value::Null) if missing_is_empty => Ok(Value::Object(Map::new())),
        Some(_) => Err(format!("the {event} event's `{key}` is not a JSON object")),
        None => Err(format!("the {event} event has no `{key}`")),
    }
}

/// An MCP tool named by its server and tool separately (the host says
/// which is which).
pub fn exact_mcp(server: &str, tool: &str) -> Result<ToolName, String> {
    if server.is_empty() || server.contains('/') {
        return Err(format!(
            "`{}` is not an MCP server id mcppol can decide (it is empty or holds `/`)",
            server.escape_debug()
        ));
    }
    if tool.is_empty() {
        return Err("the MCP tool name is empty".to_string());
    }
    Ok(ToolName::Mcp(vec![Reading {
        server: server.to_string(),
        tool: tool.to_string(),
    }]))
}

/// Every reading of `name` as `SERVER` + `sep` + `TOOL`, where `sep` may
/// also occur in either part: one reading for each place `sep` occurs with
/// something on both sides. `servers` (the known ids) keep only the
/// readings whose server they list, when any does. `None` when no place
/// fits.
pub fn split_readings(name: &str, sep: &str, servers: &[String]) -> Option<Vec<Reading>> {
    let mut readings: Vec<Reading> = name
        .match_indices(sep)
        .filter(|(i, _)| *i > 0 && i + sep.len() < name.len())
        .map(|(i, _)| Reading {
            server: name[..i].to_string(),
            tool: name[i + sep.len()..].to_string(),
        })
        .filter(|r| !r.server.contains('/'))
        .collect();
    if readings.is_empty() {
        return None;
    }
    if readings.len() > 1 && !servers.is_empty() {
        let known: Vec<Reading> = readings
            .iter()
            .filter(|r| servers.contains(&r.server))
            .cloned()
            .collect();
        if !known.is_empty() {
            readings = known;
        }
    }
    Some(readings)
}

/// A built-in tool of server `builtin`.
pub fn builtin(builtin: &str, tool: &str) -> ToolName {
    ToolName::Builtin(Reading {
        server: builtin.to_string(),
        tool: tool.to_string(),
    })
}

/// The servers whose output a call of `name` brings into the context: an
/// MCP tool's (every reading's), `web` for built-in tools in `web_tools`,
/// none for other built-in tools.
pub fn taints(name: &ToolName, web_tools: &[&str]) -> Vec<String> {
    match name {
        ToolName::Builtin(r) if web_tools.contains(&r.tool.as_str()) => {
            vec![crate::claude::names::WEB_SERVER.to_string()]
        }
        ToolName::Builtin(_) => Vec::new(),
        ToolName::Mcp(rs) => {
            let mut out: Vec<String> = Vec::new();
            for r in rs {
                if !out.contains(&r.server) {
                    out.push(r.server.clone());
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn arguments_as_objects_or_json_strings() {
        let f = fields(json!({"a": {"x": 1}, "b": "{\"y\":2}", "c": "[1]", "d": "{", "e": 3}));
        assert_eq!(arguments(&f, "a", "E", false).unwrap(), json!({"x": 1}));
        assert_eq!(arguments(&f, "b", "E", false).unwrap(), json!({"y": 2}));
        assert!(arguments(&f, "c", "E", false)
            .unwrap_err()
            .contains("does not hold a JSON object"));
        assert!(arguments(&f, "d", "E", false)
            .unwrap_err()
            .contains("not JSON"));
        assert!(arguments(&f, "e", "E", false)
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(arguments(&f, "z", "E", false)
            .unwrap_err()
            .contains("has no `z`"));
        assert_eq!(arguments(&f, "z", "E", true).unwrap(), json!({}));
    }

    #[test]
    fn roots_give_a_cwd_only_when_single() {
        let f = fields(json!({"one": ["/w"], "two": ["/a", "/b"], "bad": [3], "no": "x"}));
        assert_eq!(single_root(&f, "one", "E").unwrap(), Some("/w"));
        assert_eq!(single_root(&f, "two", "E").unwrap(), None);
        assert_eq!(single_root(&f, "none", "E").unwrap(), None);
        assert!(single_root(&f, "bad", "E").is_err());
        assert!(single_root(&f, "no", "E").is_err());
    }

    #[test]
    fn split_names_read_every_way() {
        let pairs = |n: &str, sep: &str, s: &[&str]| -> Vec<(String, String)> {
            let s: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            split_readings(n, sep, &s)
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.server, r.tool))
                .collect()
        };
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            pairs("gh-create-issue", "-", &[]),
            [p("gh", "create-issue"), p("gh-create", "issue")]
        );
        assert_eq!(
            pairs("gh-create-issue", "-", &["gh"]),
            [p("gh", "create-issue")]
        );
        assert_eq!(pairs("my_srv_do", "_", &["zzz"]).len(), 2);
        assert!(pairs("plain", "-", &[]).is_empty());
        assert!(pairs("-x", "-", &[]).is_empty());
        assert!(pairs("a/b-c", "-", &[]).is_empty());
    }

    #[test]
    fn exact_names_are_checked() {
        assert!(exact_mcp("gh", "t").is_ok());
        assert!(exact_mcp("", "t").is_err());
        assert!(exact_mcp("a/b", "t").is_err());
        assert!(exact_mcp("gh", "").is_err());
    }
}
