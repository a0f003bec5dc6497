//! Claude Code's tool names as mcppol requests.
//!
//! An MCP tool arrives as `mcp__SERVER__TOOL`; a built-in tool (`Bash`,
//! `Write`, ...) by its bare name and is governed as a tool of one server,
//! `claude` by default. A server name may itself hold `__` (and so may a
//! tool name), so `mcp__a__b__c` can be server `a` with tool `b__c` or
//! server `a__b` with tool `c`. The servers the host names resolve such a
//! name; otherwise every reading is kept and the caller decides each.

/// The prefix of MCP tool names.
pub const MCP_PREFIX: &str = "mcp__";

/// The server that built-in tools belong to unless `--builtin-server` says
/// otherwise.
pub const DEFAULT_BUILTIN_SERVER: &str = "claude";

/// The server id that `WebFetch` and `WebSearch` taint a session as.
pub const WEB_SERVER: &str = "web";

/// The built-in tools whose output comes from the web.
pub const WEB_TOOLS: [&str; 2] = ["WebFetch", "WebSearch"];

/// The built-in tools that bring an MCP server's resources into the
/// context: they taint the session by their `server` argument.
pub const RESOURCE_TOOLS: [&str; 2] = ["ReadMcpResourceTool", "ListMcpResourcesTool"];

/// A server name as Claude Code spells it in `mcp__SERVER__TOOL`: every
/// character but ASCII letters, digits, `_` and `-` made `_`.
pub fn mcp_spelling(server: &str) -> String {
    server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One way to read a tool name: a server and a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub server: String,
    pub tool: String,
}

/// What a tool name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolName {
    /// A built-in tool of the built-in server.
    Builtin(Reading),
    /// An MCP tool, with every reading left after `--servers` (one, unless
    /// the name is ambiguous).
    Mcp(Vec<Reading>),
}

impl ToolName {
    /// Reads `name`. `servers` are the known MCP server ids (may be empty).
    pub fn parse(name: &str, servers: &[String], builtin: &str) -> Result<ToolName, String> {
        let Some(rest) = name.strip_prefix(MCP_PREFIX) else {
            return Ok(ToolName::Builtin(Reading {
                server: builtin.to_string(),
                tool: name.to_string(),
            }));
        };
        let mut readings = Vec::new();
        for (i, _) in rest.match_indices('_') {
            if rest[i..].starts_with("__") && i > 0 && i + 2 < rest.len() {
                let (server, tool) = (&rest[..i], &rest[i + 2..]);
                if !server.contains('/') {
                    readings.push(Reading {
                        server: server.to_string(),
                        tool: tool.to_string(),
                    });
                }
            }
        }
        if readings.is_empty() {
            return Err(format!(
                "`{}` names no MCP server and tool (expected `mcp__SERVER__TOOL`)",
                name.escape_debug()
            ));
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
        Ok(ToolName::Mcp(readings))
    }

    /// The readings, at least one.
    pub fn readings(&self) -> &[Reading] {
        match self {
            ToolName::Builtin(r) => std::slice::from_ref(r),
            ToolName::Mcp(rs) => rs,
        }
    }

    /// The servers whose output a successful (or failed) call of this tool
    /// puts in the model's context: an MCP tool's server (every reading's,
    /// when ambiguous), `web` for `WebFetch` and `WebSearch`, none for other
    /// built-in tools.
    pub fn taints(&self) -> Vec<&str> {
        match self {
            ToolName::Builtin(r) if WEB_TOOLS.contains(&r.tool.as_str()) => vec![WEB_SERVER],
            ToolName::Builtin(_) => Vec::new(),
            ToolName::Mcp(rs) => {
                let mut out: Vec<&str> = Vec::new();
                for r in rs {
                    if !out.contains(&r.server.as_str()) {
                        out.push(&r.server);
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(name: &str, servers: &[&str]) -> Vec<(String, String)> {
        let servers: Vec<String> = servers.iter().map(|s| s.to_string()).collect();
        ToolName::parse(name, &servers, "claude")
            .unwrap()
            .readings()
            .iter()
            .map(|r| (r.server.clone(), r.tool.clone()))
            .collect()
    }

    fn p(s: &str, t: &str) -> (String, String) {
        (s.to_string(), t.to_string())
    }

    #[test]
    fn builtin_and_plain_mcp_names() {
        assert_eq!(pairs("Bash", &[]), [p("claude", "Bash")]);
        assert_eq!(
            pairs("mcp__github__create_issue", &[]),
            [p("github", "create_issue")]
        );
        assert_eq!(
            ToolName::parse("Bash", &[], "cc").unwrap().readings()[0].server,
            "cc"
        );
    }

    #[test]
    fn double_underscores_give_every_reading() {
        assert_eq!(
            pairs("mcp__my__srv__do_it", &[]),
            [p("my", "srv__do_it"), p("my__srv", "do_it")]
        );
        // Runs of underscores: every place a `__` starts.
        assert_eq!(pairs("mcp__a___b", &[]), [p("a", "_b"), p("a_", "b")]);
    }

    #[test]
    fn servers_resolve_an_ambiguous_name() {
        assert_eq!(
            pairs("mcp__my__srv__do_it", &["my__srv", "github"]),
            [p("my__srv", "do_it")]
        );
        // Two listed servers fit: both readings stay.
        assert_eq!(
            pairs("mcp__my__srv__do_it", &["my", "my__srv"]),
            [p("my", "srv__do_it"), p("my__srv", "do_it")]
        );
        // None fits: every reading stays.
        assert_eq!(pairs("mcp__a__b__c", &["zzz"]).len(), 2);
    }

    #[test]
    fn names_without_a_server_and_tool_are_refused() {
        for bad in [
            "mcp__",
            "mcp__github",
            "mcp____x",
            "mcp__x__",
            "mcp__a/b__c",
        ] {
            assert!(ToolName::parse(bad, &[], "claude").is_err(), "{bad}");
        }
    }

    #[test]
    fn what_a_tool_taints() {
        let t = |n: &str| -> Vec<String> {
            ToolName::parse(n, &[], "claude")
                .unwrap()
                .taints()
                .into_iter()
                .map(str::to_string)
                .collect()
        };
        assert_eq!(t("WebFetch"), ["web"]);
        assert_eq!(t("WebSearch"), ["web"]);
        assert!(t("Bash").is_empty());
        assert_eq!(t("mcp__github__get_issue"), ["github"]);
        assert_eq!(t("mcp__a__b__c"), ["a", "a__b"]);
    }

    #[test]
    fn server_names_as_claude_code_spells_them() {
        assert_eq!(mcp_spelling("my.server"), "my_server");
        assert_eq!(mcp_spelling("git-hub_2"), "git-hub_2");
        assert_eq!(mcp_spelling("a/b é"), "a_b__");
    }
}
