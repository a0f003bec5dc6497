//! Reading `--tools [ID=]FILE` for `table` and `lock`: whole tool
//! definitions (for fingerprints and annotations), in the forms that
//! `check --tools` reads: a `tools/list` result `{"tools": [...]}` (or the
//! JSON-RPC response around it), a bare array of tools (both need a server
//! id: `ID=FILE` or `--server ID`), or a map of server id to either
//! (read by [`crate::listing`]).

use std::collections::HashMap;

use serde_json::Value;

use crate::listing::{each_server, read_json, split_spec, IdForMap};

/// One listed tool: its server id, name and whole definition.
#[derive(Debug, Clone)]
pub struct Listed {
    pub server: String,
    pub name: String,
    pub def: Value,
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
    each_server(value, server, IdForMap::Ignore, |id, tools| {
        push(&mut out, id, tools)
    })?;
    Ok(out)
}

/// Reads `--tools [ID=]FILE`; `server` is `--server`.
pub fn read_listing(spec: &str, server: Option<&str>) -> Result<Vec<Listed>, String> {
    let (id, path) = split_spec(spec, server);
    let value = read_json(path).map_err(|e| format!("--tools: {e}"))?;
    listing(&value, id).map_err(|e| format!("--tools `{path}`: {e}"))
}

/// Reads every `--tools` (the flag may repeat: several servers'
/// listings), in the order given. A tool listed twice, in one listing or
/// in two, is an error: its two definitions could differ.
pub fn read_listings(specs: &[String], server: Option<&str>) -> Result<Vec<Listed>, String> {
    let mut out: Vec<Listed> = Vec::new();
    let mut seen: HashMap<(String, String), String> = HashMap::new();
    for spec in specs {
        for tool in read_listing(spec, server)? {
            let key = (tool.server.clone(), tool.name.clone());
            if let Some(first) = seen.get(&key) {
                return Err(format!(
                    "--tools: tool `{}/{}` is listed twice (in `{first}` and `{spec}`): \
                     give each server's listing once",
                    tool.server, tool.name
                ));
            }
            seen.insert(key, spec.clone());
            out.push(tool);
        }
    }
    Ok(out)
}
