//! Reading `--tools [ID=]FILE` for `table` and `lock`: whole tool
//! definitions (for fingerprints and annotations), in the forms that
//! `check --tools` reads: a `tools/list` result `{"tools": [...]}` (or the
//! JSON-RPC response around it), a bare array of tools (both need a server
//! id: `ID=FILE` or `--server ID`), or a map of server id to either.

use std::path::Path;

use serde_json::Value;

/// One listed tool: its server id, name and whole definition.
#[derive(Debug, Clone)]
pub struct Listed {
    pub server: String,
    pub name: String,
    pub def: Value,
}

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

fn push(out: &mut Vec<Listed>, server: &str, tools: &[Value]) -> Result<(), String> {
    for (i, tool) in tools.iter().enumerate() {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("server `{server}`: tool {i} has no string `name`"))?;
        out.push(Listed {
            server: server.to_string(),
            name: name.to_string(),
            def: tool.clone(),
        });
    }
    Ok(())
}

/// The tools a listing value holds.
pub fn listing(value: &Value, server: Option<&str>) -> Result<Vec<Listed>, String> {
    let mut out = Vec::new();
    if let Some(tools) = tools_of(value) {
        let server = server.ok_or(
            "this listing names no server: give its id with `--tools ID=FILE` or `--server ID`",
        )?;
        push(&mut out, server, tools)?;
        return Ok(out);
    }
    let Value::Object(map) = value else {
        return Err("expected a `tools/list` result (`{\"tools\": [...]}`), an array of tools, or a map of server id to one of those".into());
    };
    for (id, listing) in map {
        let tools = tools_of(listing).ok_or_else(|| {
            format!("server `{id}`: expected a `tools/list` result or an array of tools")
        })?;
        push(&mut out, id, tools)?;
    }
    Ok(out)
}

/// Reads `--tools [ID=]FILE`; `server` is `--server`.
pub fn read_listing(spec: &str, server: Option<&str>) -> Result<Vec<Listed>, String> {
    let (id, path) = match spec.split_once('=') {
        Some((id, path)) if !id.is_empty() && !id.contains('/') && !Path::new(spec).exists() => {
            (Some(id), path)
        }
        _ => (server, spec),
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--tools: cannot read `{path}`: {e}"))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("--tools: `{path}` is not JSON: {e}"))?;
    listing(&value, id).map_err(|e| format!("--tools `{path}`: {e}"))
}
