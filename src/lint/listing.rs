//! Tool listings for tool-aware checking: what `mcppol check --tools` reads.
//!
//! A file holds one of:
//! - a `tools/list` result, `{"tools": [...]}`, or the whole JSON-RPC
//!   response around it, `{"result": {"tools": [...]}}`;
//! - a bare array of tools;
//! - a map of server id to either of those: `{"fs": {"tools": [...]}}`.
//!
//! The first two name no server: the id comes from `--tools ID=FILE` or
//! from `--server ID`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// One listed tool: what the checker uses of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub input_schema: Option<Value>,
}

/// The tools of every listed server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    servers: BTreeMap<String, Vec<ToolDef>>,
}

/// Why a listing could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ListingError(pub String);

fn err(message: impl Into<String>) -> ListingError {
    ListingError(message.into())
}

impl Listing {
    /// Reads `--tools SPEC`: `ID=FILE` or `FILE`; `server` is `--server`.
    pub fn add_spec(&mut self, spec: &str, server: Option<&str>) -> Result<(), ListingError> {
        let (id, path) = match spec.split_once('=') {
            Some((id, path))
                if !id.is_empty() && !id.contains('/') && !Path::new(spec).exists() =>
            {
                (Some(id), path)
            }
            _ => (server, spec),
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("cannot read `{path}`: {e}")))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| err(format!("`{path}` is not JSON: {e}")))?;
        self.add(id, &value)
            .map_err(|e| err(format!("`{path}`: {}", e.0)))
    }

    /// Adds a listing, or a map of server id to listing.
    pub fn add(&mut self, server: Option<&str>, value: &Value) -> Result<(), ListingError> {
        if let Some(tools) = tools_of(value) {
            let Some(server) = server else {
                return Err(err(
                    "this listing names no server: give its id with `--tools ID=FILE` or `--server ID`",
                ));
            };
            return self.insert(server, tools);
        }
        let Value::Object(map) = value else {
            return Err(err(
                "expected a `tools/list` result (`{\"tools\": [...]}`), an array of tools, or a map of server id to one of those",
            ));
        };
        if let Some(server) = server {
            return Err(err(format!(
                "this file maps server ids to listings, so `{server}=` is not needed: write `--tools FILE`"
            )));
        }
        for (id, listing) in map {
            let tools = tools_of(listing).ok_or_else(|| {
                err(format!(
                    "server `{id}`: expected a `tools/list` result or an array of tools"
                ))
            })?;
            self.insert(id, tools)?;
        }
        Ok(())
    }

    fn insert(&mut self, server: &str, tools: &[Value]) -> Result<(), ListingError> {
        let list = self.servers.entry(server.to_string()).or_default();
        for (i, tool) in tools.iter().enumerate() {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("server `{server}`: tool {i} has no `name`")))?;
            list.push(ToolDef {
                name: name.to_string(),
                input_schema: tool.get("inputSchema").cloned(),
            });
        }
        Ok(())
    }

    /// The tools of one server, if it is listed.
    pub fn server(&self, id: &str) -> Option<&[ToolDef]> {
        self.servers.get(id).map(Vec::as_slice)
    }

    /// Every listed tool with its server id.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ToolDef)> {
        self.servers
            .iter()
            .flat_map(|(s, tools)| tools.iter().map(move |t| (s.as_str(), t)))
    }

    /// The listed server ids.
    pub fn server_ids(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
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

    #[test]
    fn forms() {
        let tool = json!({"name": "read_file", "inputSchema": {"type": "object"}});
        let mut l = Listing::default();
        l.add(Some("fs"), &json!([tool])).unwrap();
        l.add(Some("gh"), &json!({"tools": [{"name": "get_me"}]}))
            .unwrap();
        l.add(
            None,
            &json!({"web": {"result": {"tools": [{"name": "fetch"}]}}}),
        )
        .unwrap();
        let names: Vec<_> = l.tools().map(|(s, t)| format!("{s}/{}", t.name)).collect();
        assert_eq!(names, vec!["fs/read_file", "gh/get_me", "web/fetch"]);
        assert!(l.add(None, &json!([tool])).is_err());
        assert!(l.add(Some("x"), &json!({"web": []})).is_err());
    }
}
