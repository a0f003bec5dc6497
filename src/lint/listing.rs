//! Tool listings for tool-aware checking: what `mcppol check --tools`
//! reads (the forms are read in `src/listing.rs`), kept per server with what
//! the checker uses of each tool.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::listing::{each_server, read_json, split_spec, IdForMap};

/// One listed tool: what the checker uses of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolDef {
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
#[non_exhaustive]
pub struct ListingError(pub String);

fn err(message: impl Into<String>) -> ListingError {
    ListingError(message.into())
}

impl Listing {
    /// Reads `--tools SPEC`: `ID=FILE` or `FILE`; `server` is `--server`.
    pub fn add_spec(&mut self, spec: &str, server: Option<&str>) -> Result<(), ListingError> {
        let (id, path) = split_spec(spec, server);
        let value = read_json(path).map_err(err)?;
        self.add(id, &value)
            .map_err(|e| err(format!("`{path}`: {}", e.0)))
    }

    /// Adds a listing, or a map of server id to listing.
    pub fn add(&mut self, server: Option<&str>, value: &Value) -> Result<(), ListingError> {
        each_server(value, server, IdForMap::Refuse, |id, tools| {
            self.insert(id, tools).map_err(|e| e.0)
        })
        .map_err(err)
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
    pub(crate) fn server(&self, id: &str) -> Option<&[ToolDef]> {
        self.servers.get(id).map(Vec::as_slice)
    }

    /// Every listed tool with its server id.
    pub(crate) fn tools(&self) -> impl Iterator<Item = (&str, &ToolDef)> {
        self.servers
            .iter()
            .flat_map(|(s, tools)| tools.iter().map(move |t| (s.as_str(), t)))
    }

    /// The listed server ids.
    pub(crate) fn server_ids(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
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
