//! Reading tool listings: what `check --tools`, `table --tools` and
//! `lock --tools` read.
//!
//! A file holds one of:
//! - a `tools/list` result, `{"tools": [...]}`, or the whole JSON-RPC
//!   response around it, `{"result": {"tools": [...]}}`;
//! - a bare array of tools;
//! - a map of server id to either of those: `{"fs": {"tools": [...]}}`.
//!
//! The first two name no server: the id comes from `--tools ID=FILE` or
//! from `--server ID`.

use std::path::Path;

use serde_json::Value;

/// Splits `--tools SPEC` into its server id and file: `ID=FILE`, or `FILE`
/// with `server` (`--server`) as the id. A spec that names an existing file
/// is a file, even with a `=` in it.
pub fn split_spec<'a>(spec: &'a str, server: Option<&'a str>) -> (Option<&'a str>, &'a str) {
    match spec.split_once('=') {
        Some((id, path)) if !id.is_empty() && !id.contains('/') && !Path::new(spec).exists() => {
            (Some(id), path)
        }
        _ => (server, spec),
    }
}

/// Reads the JSON file at `path`.
pub fn read_json(path: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("`{path}` is not JSON: {e}"))
}

/// What to do with a server id given for a file that maps server ids to
/// listings, and so names its servers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub enum IdForMap {
    /// Read the map; the id is not used.
    Ignore,
    /// Refuse it: the `ID=` is a mistake.
    Refuse,
}

/// Calls `each` with the tools array of every server in a listing value,
/// with the server's id, in the file's order; stops at the first error.
pub fn each_server<'v>(
    value: &'v Value,
    server: Option<&str>,
    id_for_map: IdForMap,
    mut each: impl FnMut(&str, &'v [Value]) -> Result<(), String>,
) -> Result<(), String> {
    if let Some(tools) = tools_of(value) {
        let Some(server) = server else {
            return Err(
                "this listing names no server: give its id with `--tools ID=FILE` or `--server ID`"
                    .into(),
            );
        };
        return each(server, tools);
    }
    let Value::Object(map) = value else {
        return Err("expected a `tools/list` result (`{\"tools\": [...]}`), an array of tools, or a map of server id to one of those".into());
    };
    if let (Some(server), IdForMap::Refuse) = (server, id_for_map) {
        return Err(format!(
            "this file maps server ids to listings, so `{server}=` is not needed: write `--tools FILE`"
        ));
    }
    for (id, listing) in map {
        let tools = tools_of(listing).ok_or_else(|| {
            format!("server `{id}`: expected a `tools/list` result or an array of tools")
        })?;
        each(id, tools)?;
    }
    Ok(())
}

/// The tools array of a listing, if `value` is one.
fn tools_of(value: &Value) -> Option<&[Value]> {
    match value {
        Value::Array(items) => Some(items),
        Value::Object(map) => match (map.get("tools"), map.get("result")) {
            (Some(Value::Array(items)), _) => Some(items),
            (None, Some(result)) => result
                .get("tools")
                .and_then(Value::as_array)
                .map(Vec::as_slice),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(value: &Value, server: Option<&str>, id: IdForMap) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        each_server(value, server, id, |s, tools| {
            out.push(format!("{s}:{}", tools.len()));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn forms() {
        let refuse = IdForMap::Refuse;
        assert_eq!(
            ids(&json!([{}]), Some("fs"), refuse),
            Ok(vec!["fs:1".into()])
        );
        assert_eq!(
            ids(&json!({"tools": [{}, {}]}), Some("gh"), refuse),
            Ok(vec!["gh:2".into()])
        );
        assert_eq!(
            ids(
                &json!({"a": {"result": {"tools": []}}, "b": []}),
                None,
                refuse
            ),
            Ok(vec!["a:0".into(), "b:0".into()])
        );
        assert!(ids(&json!([]), None, refuse).is_err());
        assert!(ids(&json!({"a": []}), Some("x"), refuse).is_err());
        assert_eq!(
            ids(&json!({"a": []}), Some("x"), IdForMap::Ignore),
            Ok(vec!["a:0".into()])
        );
        assert!(ids(&json!({"a": 1}), None, refuse).is_err());
        assert!(ids(&json!(1), None, refuse).is_err());
    }

    #[test]
    fn specs() {
        assert_eq!(split_spec("fs=a.json", None), (Some("fs"), "a.json"));
        assert_eq!(split_spec("a.json", Some("gh")), (Some("gh"), "a.json"));
        assert_eq!(split_spec("d/x=a.json", None), (None, "d/x=a.json"));
        assert_eq!(split_spec("=a.json", None), (None, "=a.json"));
    }
}
