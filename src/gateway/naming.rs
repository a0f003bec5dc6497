//! Namespacing: the host sees one listing in which every server's tools
//! and prompts are `SERVER` + separator + the server's own name
//! (`fs__read_file`), while each server's pipeline (and so the policy)
//! sees the server's own name (`fs/read_file`). Resources keep their URIs
//! and are routed to the one server that listed them.

use std::collections::BTreeMap;

use serde_json::Value;

/// The separator between a server id and a tool or prompt name, unless
/// `--separator` says otherwise.
pub(crate) const DEFAULT_SEPARATOR: &str = "__";

/// The longest separator accepted (bytes).
const MAX_SEPARATOR_BYTES: usize = 16;

/// Checks the separator and the server ids together: each id must be one
/// the host can be given back unambiguously, so no id may hold the
/// separator (`a__b` + `__` + `c` would read as server `a`).
pub(crate) fn check(ids: &[&str], separator: &str) -> Result<(), String> {
    if separator.is_empty() || separator.len() > MAX_SEPARATOR_BYTES {
        return Err(format!(
            "--separator `{separator}` must be 1 to {MAX_SEPARATOR_BYTES} bytes"
        ));
    }
    if separator.contains('/') || separator.chars().any(char::is_whitespace) {
        return Err(format!(
            "--separator `{separator}` holds `/` or a space: hosts refuse such tool names; use `__` (the default), `_` or `.`"
        ));
    }
    for id in ids {
        if id.contains(separator) {
            return Err(format!(
                "the server id `{id}` holds the separator `{separator}`, so `{id}{separator}TOOL` could not be routed back; rename the server in the servers file or pick another --separator"
            ));
        }
    }
    Ok(())
}

/// The host's name of a server's tool or prompt.
pub(crate) fn qualify(server: &str, name: &str, separator: &str) -> String {
    format!("{server}{separator}{name}")
}

/// The server id and the server's own name of a host's name: split at the
/// first separator (no server id holds it, see [`check`]). `None` when the
/// name has no separator or nothing on either side of it.
pub(crate) fn split<'a>(name: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    let (server, own) = name.split_once(separator)?;
    (!server.is_empty() && !own.is_empty()).then_some((server, own))
}

/// Renames each listed item's `name` to the host's name; an item without a
/// string `name` is left out (the host could not call it anyway).
pub(crate) fn qualify_items(server: &str, items: Vec<Value>, separator: &str) -> Vec<Value> {
    items
        .into_iter()
        .filter_map(|mut item| {
            let own = item.get("name")?.as_str()?.to_string();
            item["name"] = Value::from(qualify(server, &own, separator));
            Some(item)
        })
        .collect()
}

/// Where each listed resource URI is routed: the servers that listed it,
/// in the servers file's order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ResourceRoutes {
    by_uri: BTreeMap<String, Vec<String>>,
}

/// Where a resource read goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// The one server that listed the URI.
    To(&'a str),
    /// No server listed it.
    Unknown,
    /// Several did: refused, since either could answer for the other.
    Ambiguous(&'a [String]),
}

impl ResourceRoutes {
    /// Records that `server` listed these resources (their `uri`s).
    pub(crate) fn add(&mut self, server: &str, resources: &[Value]) {
        for uri in resources
            .iter()
            .filter_map(|r| r.get("uri").and_then(Value::as_str))
        {
            let servers = self.by_uri.entry(uri.to_string()).or_default();
            if !servers.iter().any(|s| s == server) {
                servers.push(server.to_string());
            }
        }
    }

    /// Where a read of `uri` goes.
    pub(crate) fn route(&self, uri: &str) -> Route<'_> {
        match self.by_uri.get(uri).map(Vec::as_slice) {
            None | Some([]) => Route::Unknown,
            Some([one]) => Route::To(one),
            Some(many) => Route::Ambiguous(many),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_go_out_qualified_and_come_back_split_at_the_first_separator() {
        assert_eq!(qualify("fs", "read_file", "__"), "fs__read_file");
        assert_eq!(split("fs__read_file", "__"), Some(("fs", "read_file")));
        // The server's own name may hold the separator: only the first
        // one splits (no server id holds it).
        assert_eq!(split("fs__a__b", "__"), Some(("fs", "a__b")));
        assert_eq!(split("fs.read", "."), Some(("fs", "read")));
        for name in ["read_file", "__read", "fs__", ""] {
            assert_eq!(split(name, "__"), None, "{name}");
        }
    }

    #[test]
    fn ids_holding_the_separator_and_bad_separators_are_refused() {
        assert!(check(&["fs", "memory"], "__").is_ok());
        let e = check(&["fs", "my__fs"], "__").unwrap_err();
        assert!(e.contains("`my__fs`") && e.contains("--separator"), "{e}");
        assert!(check(&["my_fs"], "__").is_ok());
        assert!(check(&["fs"], "").is_err());
        assert!(check(&["fs"], "/").is_err());
        assert!(check(&["fs"], " ").is_err());
        assert!(check(&["fs"], &"x".repeat(17)).is_err());
    }

    #[test]
    fn listed_items_are_renamed_and_nameless_ones_left_out() {
        let items = vec![
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
            json!({"title": "no name"}),
            json!({"name": 3}),
        ];
        let out = qualify_items("e", items, "__");
        assert_eq!(
            out,
            [json!({"name": "e__echo", "inputSchema": {"type": "object"}})]
        );
    }

    #[test]
    fn a_uri_is_routed_to_the_one_server_that_listed_it() {
        let mut routes = ResourceRoutes::default();
        routes.add(
            "a",
            &[json!({"uri": "mem://x"}), json!({"uri": "mem://both"})],
        );
        routes.add(
            "b",
            &[json!({"uri": "mem://both"}), json!({"name": "no uri"})],
        );
        routes.add("b", &[json!({"uri": "mem://both"})]);
        assert_eq!(routes.route("mem://x"), Route::To("a"));
        assert_eq!(routes.route("mem://nope"), Route::Unknown);
        let both = ["a".to_string(), "b".to_string()];
        assert_eq!(routes.route("mem://both"), Route::Ambiguous(&both));
    }
}
