//! The servers file: the `mcpServers` object that MCP hosts already use
//! (Claude Desktop's `claude_desktop_config.json`, Claude Code's
//! `.mcp.json`), read by `mcppol gateway --servers`, `mcppol proxy
//! --servers FILE --server NAME` and `mcppol tools`.
//!
//! ```json
//! {"mcpServers": {
//!   "fs":     {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
//!   "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
//!              "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
//! }}
//! ```
//!
//! A server's key is its server id in the policy. `${VAR}` (and
//! `${VAR:-default}`) in `command`, `args`, `env`, `url` and `headers` is
//! expanded from the environment when the file is read, so tokens stay out
//! of the file; a variable that is not set (and has no default) is an
//! error naming the server and the field, never an empty string sent as a
//! token. Fields this reader does not know are refused, so a misspelt
//! `headres` is not silently dropped (a token then never sent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The most servers one file may name.
pub const MAX_SERVERS: usize = 256;

/// The longest a server id may be (bytes).
pub const MAX_SERVER_ID_BYTES: usize = 128;

/// One server of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Its key in `mcpServers`: the server id the policy names.
    pub id: String,
    /// How to reach it.
    pub transport: ServerTransport,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process speaking newline-delimited JSON-RPC on its stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the child's environment.
        env: BTreeMap<String, String>,
        /// The folder it runs in (`cwd`), when the file gives one.
        cwd: Option<PathBuf>,
    },
    /// A remote server over streamable HTTP (`type`: `http` or
    /// `streamable-http`).
    Http {
        /// The endpoint (`http://` or `https://`).
        url: String,
        /// Headers sent with every request (`Authorization`, ...).
        headers: BTreeMap<String, String>,
    },
}

/// The servers of one file, in the file's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Servers {
    /// Each server, in the order the file lists them.
    pub servers: Vec<ServerSpec>,
}

impl Servers {
    /// Reads a servers file (bounded, regular files only), expanding
    /// `${VAR}` from the process's environment.
    ///
    /// # Errors
    ///
    /// A message naming the file and what is wrong with it.
    pub fn read(path: &Path) -> Result<Servers, String> {
        let text = crate::io::read_text(path, crate::io::MAX_JSON_BYTES, "servers file")?;
        Servers::parse(&text, &|name| std::env::var(name).ok())
            .map_err(|e| format!("`{}`: {e}", path.display()))
    }

    /// Parses a servers file's text; `env` looks a variable up.
    ///
    /// # Errors
    ///
    /// What is wrong, naming the server and the field.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Servers, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Some(root) = root.as_object() else {
            return Err("the file is not a JSON object: write {\"mcpServers\": {...}}".into());
        };
        // Claude Code's `.mcp.json` and Claude Desktop's config both name
        // the object `mcpServers`; VS Code's `mcp.json` calls it `servers`.
        let table = root
            .get("mcpServers")
            .or_else(|| root.get("servers"))
            .ok_or("no `mcpServers` object: write {\"mcpServers\": {\"NAME\": {...}}}")?;
        let Some(table) = table.as_object() else {
            return Err("`mcpServers` is not an object of servers by name".into());
        };
        if table.len() > MAX_SERVERS {
            return Err(format!(
                "{} servers: the most one file may name is {MAX_SERVERS}",
                table.len()
            ));
        }
        let mut servers = Vec::with_capacity(table.len());
        for (id, entry) in table {
            check_id(id)?;
            let entry = entry
                .as_object()
                .ok_or_else(|| format!("server `{id}` is not an object"))?;
            servers.push(ServerSpec {
                id: id.clone(),
                transport: transport(id, entry, env)?,
            });
        }
        Ok(Servers { servers })
    }

    /// The server named `id`.
    ///
    /// # Errors
    ///
    /// When the file has no such server: the names it has, and the
    /// nearest one.
    pub fn get(&self, id: &str) -> Result<&ServerSpec, String> {
        if let Some(s) = self.servers.iter().find(|s| s.id == id) {
            return Ok(s);
        }
        let names: Vec<&str> = self.servers.iter().map(|s| s.id.as_str()).collect();
        let hint = crate::diagnostics::did_you_mean(id, names.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        Err(format!(
            "no server `{id}` in the servers file{hint}; it has: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    }
}

/// A server id is what the policy names before `/`: no `/`, no white
/// space or control characters, not empty, bounded.
fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("a server has an empty name".into());
    }
    if id.len() > MAX_SERVER_ID_BYTES {
        return Err(format!(
            "server `{}...` has a name longer than {MAX_SERVER_ID_BYTES} bytes",
            crate::escape::escape(crate::escape::cut_at(id, 32))
        ));
    }
    if let Some(c) = id
        .chars()
        .find(|c| *c == '/' || c.is_whitespace() || crate::escape::is_hidden(*c))
    {
        let what = if c == '/' {
            "`/`".to_string()
        } else {
            format!("U+{:04X}", u32::from(c))
        };
        return Err(format!(
            "server `{}` has {what} in its name: a server id is what a policy writes \
             before `/`, so it has no `/`, white space or invisible characters",
            crate::escape::escape(id),
        ));
    }
    Ok(())
}

const STDIO_FIELDS: &[&str] = &["type", "command", "args", "env", "cwd"];
const HTTP_FIELDS: &[&str] = &["type", "url", "headers"];

fn transport(
    id: &str,
    entry: &Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerTransport, String> {
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(format!("server `{id}`: `type` is not a string")),
    };
    let remote = match kind {
        Some("stdio") => false,
        Some("http" | "streamable-http" | "streamableHttp") => true,
        None => !entry.contains_key("command") && entry.contains_key("url"),
        Some("sse") => {
            return Err(format!(
                "server `{id}`: `type: \"sse\"` is the old HTTP+SSE transport, which \
                 mcppol does not speak: use the server's streamable-HTTP endpoint \
                 (`type: \"http\"`)"
            ))
        }
        Some(other) => {
            return Err(format!(
                "server `{id}`: unknown `type` `{}`: write `stdio`, `http` or `streamable-http`",
                crate::escape::escape(other)
            ))
        }
    };
    let allowed = if remote { HTTP_FIELDS } else { STDIO_FIELDS };
    for key in entry.keys() {
        if !allowed.contains(&key.as_str()) {
            let hint = crate::diagnostics::did_you_mean(key, allowed.iter().copied())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "server `{id}`: unknown field `{}`{hint}; a {} server has {}",
                crate::escape::escape(key),
                if remote { "remote" } else { "stdio" },
                allowed.join(", ")
            ));
        }
    }
    let expand = |field: &str, text: &str| {
        expand(text, env).map_err(|e| format!("server `{id}`, `{field}`: {e}"))
    };
    if remote {
        let url = string(id, entry, "url")?.ok_or_else(|| format!("server `{id}` has no `url`"))?;
        let url = expand("url", &url)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "server `{id}`: `url` must start with http:// or https://"
            ));
        }
        let mut headers = BTreeMap::new();
        for (name, value) in string_map(id, entry, "headers")? {
            let value = expand(&format!("headers.{name}"), &value)?;
            headers.insert(name, value);
        }
        return Ok(ServerTransport::Http { url, headers });
    }
    let command = string(id, entry, "command")?
        .ok_or_else(|| format!("server `{id}` has neither `command` nor `url`"))?;
    let command = expand("command", &command)?;
    if command.is_empty() {
        return Err(format!("server `{id}`: `command` is empty"));
    }
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Value::String(s) => expand(&format!("args[{i}]"), s),
                _ => Err(format!("server `{id}`: `args[{i}]` is not a string")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("server `{id}`: `args` is not a list of strings")),
    };
    let mut vars = BTreeMap::new();
    for (name, value) in string_map(id, entry, "env")? {
        let value = expand(&format!("env.{name}"), &value)?;
        vars.insert(name, value);
    }
    let cwd = match string(id, entry, "cwd")? {
        Some(c) => Some(PathBuf::from(expand("cwd", &c)?)),
        None => None,
    };
    Ok(ServerTransport::Stdio {
        command,
        args,
        env: vars,
        cwd,
    })
}

fn string(id: &str, entry: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match entry.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("server `{id}`: `{field}` is not a string")),
    }
}

fn string_map(
    id: &str,
    entry: &Map<String, Value>,
    field: &str,
) -> Result<Vec<(String, String)>, String> {
    match entry.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("server `{id}`: `{field}.{k}` is not a string")),
            })
            .collect(),
        Some(_) => Err(format!(
            "server `{id}`: `{field}` is not an object of strings"
        )),
    }
}

/// Expands `${VAR}` and `${VAR:-default}`; `$$` is a `$`. A `$` before
/// anything else is kept as it is (a password may hold one).
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err("`${` is not closed with `}`".into());
        };
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "`${{{}}}` is not a variable name (letters, digits and `_`)",
                crate::escape::escape(inner)
            ));
        }
        match env(name).or_else(|| default.map(str::to_string)) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(format!(
                    "the environment variable `{name}` is not set (write `${{{name}:-default}}` \
                     for a default)"
                ))
            }
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "HOME" => Some("/home/dana".into()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Servers, String> {
        Servers::parse(text, &env)
    }

    #[test]
    fn reads_stdio_and_http_servers_in_order() {
        let s = parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server", "${HOME}/src"], "env": {"A": "1"}},
                "gh": {"type": "http", "url": "https://example.test/mcp",
                       "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "bare": {"url": "http://127.0.0.1:9/mcp"}
            }}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<&str> = s.servers.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["fs", "gh", "bare"]);
        assert_eq!(
            s.servers[0].transport,
            ServerTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into(), "/home/dana/src".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
                cwd: None,
            }
        );
        let ServerTransport::Http { url, headers } = &s.servers[1].transport else {
            panic!("gh is remote");
        };
        assert_eq!(url, "https://example.test/mcp");
        assert_eq!(headers["Authorization"], "Bearer s3cret");
        assert!(matches!(
            s.servers[2].transport,
            ServerTransport::Http { .. }
        ));
    }

    #[test]
    fn an_unset_variable_is_an_error_not_an_empty_token() {
        let e = parse(r#"{"mcpServers": {"gh": {"type": "http", "url": "https://x.test", "headers": {"Authorization": "Bearer ${NOPE}"}}}}"#)
            .err()
            .unwrap_or_default();
        assert!(e.contains("server `gh`, `headers.Authorization`"), "{e}");
        assert!(e.contains("`NOPE` is not set"), "{e}");
        let ok = parse(
            r#"{"mcpServers": {"a": {"command": "x", "args": ["${NOPE:-dflt}", "$5", "$$"]}}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ServerTransport::Stdio { args, .. } = &ok.servers[0].transport else {
            panic!("stdio");
        };
        assert_eq!(args, &["dflt", "$5", "$"]);
    }

    #[test]
    fn refuses_what_it_cannot_read_faithfully() {
        for (text, want) in [
            (r#"[]"#, "not a JSON object"),
            (r#"{}"#, "no `mcpServers`"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "headres": {}}}}"#,
                "unknown field `headres`",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://x", "headres": {}}}}"#,
                "did you mean `headers`",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "https://x"}}}"#,
                "old HTTP+SSE",
            ),
            (r#"{"mcpServers": {"a/b": {"command": "x"}}}"#, "has `/`"),
            (
                r#"{"mcpServers": {"a": {"args": []}}}"#,
                "neither `command` nor `url`",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://x"}}}"#,
                "http:// or https://",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": [1]}}}"#,
                "`args[0]` is not a string",
            ),
            (r#"{"mcpServers": {"a": {"command": "${A"}}}"#, "not closed"),
        ] {
            let e = parse(text).err().unwrap_or_default();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn get_names_the_nearest_server() {
        let s = parse(r#"{"mcpServers": {"github": {"command": "x"}, "fs": {"command": "y"}}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.get("fs").is_ok());
        let e = s.get("githb").err().unwrap_or_default();
        assert!(e.contains("did you mean `github`"), "{e}");
        assert!(e.contains("it has: github, fs"), "{e}");
    }
}
