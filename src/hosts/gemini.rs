//! Gemini CLI (`mcppol hook gemini`).
//!
//! Gemini CLI sends `hook_event_name` (`BeforeTool`, `AfterTool`,
//! `SessionEnd`, ...), `session_id`, `cwd`, and for tool events
//! `tool_name`, `tool_input` and, for MCP tools, `mcp_context`. It blocks
//! a tool on `decision: "deny"` (or `"block"`) with a `reason` (exit 0,
//! JSON on stdout), asks on `decision: "ask"` (v0.36 and later), and
//! blocks on exit 2 with the reason on stderr; any other exit is a
//! warning and the tool runs, as it does with no output. So a decision is
//! JSON on exit 0, and an input the hook cannot read is exit 2.
//!
//! MCP tools: `mcp_context.server_name` and `.tool_name` when present;
//! else `mcp__SERVER__TOOL` read as Claude Code's, or `mcp_SERVER_TOOL`
//! read every way (the strictest decision stands).

use serde_json::{json, Value};

use super::fields::{self, Fields};
use super::{exit2, json_line, kind_by_field, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::names::{ToolName, MCP_PREFIX};
use crate::claude::{HookConfig, HookOutput};

const KINDS: [Kind; 3] = [
    Kind {
        native: "BeforeTool",
        stage: Stage::Pre,
        can_ask: true,
    },
    Kind {
        native: "AfterTool",
        stage: Stage::Post,
        can_ask: false,
    },
    Kind {
        native: "SessionEnd",
        stage: Stage::End,
        can_ask: false,
    },
];

/// The built-in tools whose output comes from the web.
const WEB_TOOLS: [&str; 2] = ["web_fetch", "google_web_search"];

/// Gemini CLI's hook.
pub static SPEC: Spec = Spec {
    host: Host::Gemini,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[
            ("read_file", "file_path"),
            ("write_file", "file_path"),
            ("replace", "file_path"),
            ("list_directory", "dir_path"),
            ("glob", "dir_path"),
            ("search_file_content", "dir_path"),
        ],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "hook_event_name", &KINDS, Host::Gemini)
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "write_file" | "replace" => Some(Reach::Write("file_path")),
        "run_shell_command" => Some(Reach::Shell("command")),
        _ => None,
    }
}

/// What Gemini's tool name stands for.
fn name(tool: &str, f: &Fields, config: &HookConfig, event: &str) -> Result<ToolName, String> {
    if let Some(Value::Object(ctx)) = f.get("mcp_context") {
        let server = fields::string(
            ctx,
            "server_name",
            crate::claude::event::MAX_FIELD_BYTES,
            event,
        )?;
        let tool = fields::tool_name(ctx, "tool_name", event)?;
        return fields::exact_mcp(server, tool);
    }
    if tool.starts_with(MCP_PREFIX) {
        return ToolName::parse(tool, &config.servers, &config.builtin_server);
    }
    if let Some(rest) = tool.strip_prefix("mcp_") {
        return fields::split_readings(rest, "_", &config.servers)
            .map(ToolName::Mcp)
            .ok_or_else(|| {
                format!(
                    "`{}` names no MCP server and tool (expected `mcp_SERVER_TOOL`)",
                    tool.escape_debug()
                )
            });
    }
    Ok(fields::builtin(&config.builtin_server, tool))
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let session = fields::session(f, "session_id", event)?.to_string();
    if kind.stage == Stage::End {
        return Ok(Read::End { session });
    }
    let tool = fields::tool_name(f, "tool_name", event)?;
    let name = name(tool, f, config, event)?;
    if kind.stage == Stage::Post {
        return Ok(Read::Taint {
            session,
            servers: fields::taints(&name, &WEB_TOOLS),
        });
    }
    Ok(Read::Call {
        session,
        cwd: fields::optional_cwd(f, "cwd", event)?.map(str::to_string),
        shown: tool.to_string(),
        input: fields::arguments(f, "tool_input", event, false)?,
        name,
    })
}

fn answer(kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match (kind, reply) {
        (_, Reply::Done) => json_line(&json!({}), 0),
        (_, Reply::Allow) => json_line(&json!({"decision": "allow"}), 0),
        (Some(_), Reply::Ask(reason)) => {
            json_line(&json!({"decision": "ask", "reason": reason}), 0)
        }
        // An AfterTool `deny` hides the tool's output from the model: the
        // right answer when its taint could not be recorded.
        (Some(_), Reply::Block(reason)) => {
            json_line(&json!({"decision": "deny", "reason": reason}), 0)
        }
        (None, Reply::Ask(reason) | Reply::Block(reason)) => exit2(Host::Gemini, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> HookConfig {
        HookConfig {
            builtin_server: "gemini".into(),
            ..HookConfig::new("p.mcppol")
        }
    }

    fn readings(tool: &str, extra: Value) -> Vec<(String, String)> {
        let mut f = json!({"tool_name": tool}).as_object().cloned().unwrap();
        if let Value::Object(m) = extra {
            f.extend(m);
        }
        name(tool, &f, &config(), "BeforeTool")
            .unwrap()
            .readings()
            .iter()
            .map(|r| (r.server.clone(), r.tool.clone()))
            .collect()
    }

    #[test]
    fn names_are_read_as_gemini_spells_them() {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            readings("run_shell_command", json!({})),
            [p("gemini", "run_shell_command")]
        );
        assert_eq!(
            readings(
                "mcp_my_srv_do",
                json!({"mcp_context": {"server_name": "my_srv", "tool_name": "do"}})
            ),
            [p("my_srv", "do")]
        );
        assert_eq!(
            readings("mcp_my_srv_do", json!({})),
            [p("my", "srv_do"), p("my_srv", "do")]
        );
        assert_eq!(readings("mcp__gh__get", json!({})), [p("gh", "get")]);
    }

    #[test]
    fn answers() {
        let k = Some(KINDS[0]);
        let out = answer(k, &Reply::Block("no".into()));
        assert_eq!(
            (out.status, out.stdout.as_deref()),
            (0, Some("{\"decision\":\"deny\",\"reason\":\"no\"}\n"))
        );
        let out = answer(None, &Reply::Block("bad".into()));
        assert_eq!(out.status, 2);
    }
}
