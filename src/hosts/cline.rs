//! Cline (`mcppol hook cline`).
//!
//! Cline runs an executable named after the hook (`PreToolUse`,
//! `PostToolUse`, `TaskComplete`, `TaskCancel`, ...) from its hooks folder
//! with `{clineVersion, hookName, timestamp, taskId, workspaceRoots,
//! userId}` and the hook's own object (`preToolUse: {toolName,
//! parameters}`, `postToolUse: {toolName, parameters, result, success}`).
//! Only `{"cancel": true}` on stdout stops a tool; every other output,
//! exit and failure lets it run, and its hooks cannot ask. So every
//! refusal is `{"cancel": true, "errorMessage": ...}` on exit 0, an ask
//! among them.
//!
//! Tools: `execute_command` `{command}`, `read_file`, `write_to_file`,
//! `replace_in_file` ... `{path}` under the one workspace root;
//! `use_mcp_tool` `{server_name, tool_name, arguments: a JSON string}` is
//! the MCP tool `server_name/tool_name` with those arguments; a name
//! `S__T` is an MCP tool read as Claude Code's. The task id keys taint;
//! `TaskComplete` and `TaskCancel` end it.

use serde_json::{json, Value};

use super::fields::{self, Fields};
use super::{json_line, kind_by_field, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::event::MAX_FIELD_BYTES;
use crate::claude::names::{ToolName, MCP_PREFIX};
use crate::claude::{HookConfig, HookOutput};

const KINDS: [Kind; 4] = [
    Kind {
        native: "PreToolUse",
        stage: Stage::Pre,
        can_ask: false,
    },
    Kind {
        native: "PostToolUse",
        stage: Stage::Post,
        can_ask: false,
    },
    Kind {
        native: "TaskComplete",
        stage: Stage::End,
        can_ask: false,
    },
    Kind {
        native: "TaskCancel",
        stage: Stage::End,
        can_ask: false,
    },
];

/// The built-in tools whose output comes from the web.
const WEB_TOOLS: [&str; 3] = ["web_fetch", "web_search", "browser_action"];

/// Cline's hook.
pub static SPEC: Spec = Spec {
    host: Host::Cline,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[
            ("read_file", "path"),
            ("write_to_file", "path"),
            ("replace_in_file", "path"),
            ("list_files", "path"),
            ("search_files", "path"),
            ("list_code_definition_names", "path"),
        ],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "hookName", &KINDS, Host::Cline)
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "write_to_file" | "replace_in_file" => Some(Reach::Write("path")),
        "execute_command" => Some(Reach::Shell("command")),
        _ => None,
    }
}

/// The tool and its arguments as the policy sees them.
fn call(
    tool: &str,
    params: &Fields,
    config: &HookConfig,
    event: &str,
) -> Result<(ToolName, Value), String> {
    if tool == "use_mcp_tool" {
        let server = fields::string(params, "server_name", MAX_FIELD_BYTES, event)?;
        let name = fields::tool_name(params, "tool_name", event)?;
        let args = fields::arguments(params, "arguments", event, true)?;
        return Ok((fields::exact_mcp(server, name)?, args));
    }
    let args = Value::Object(params.clone());
    if tool.contains("__") {
        let name = ToolName::parse(
            &format!("{MCP_PREFIX}{tool}"),
            &config.servers,
            &config.builtin_server,
        )?;
        return Ok((name, args));
    }
    Ok((fields::builtin(&config.builtin_server, tool), args))
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let session = fields::session(f, "taskId", event)?.to_string();
    if kind.stage == Stage::End {
        return Ok(Read::End { session });
    }
    let key = if kind.stage == Stage::Pre {
        "preToolUse"
    } else {
        "postToolUse"
    };
    let body = fields::object(f, key, event)?;
    let tool = fields::tool_name(body, "toolName", event)?;
    let params = match body.get("parameters") {
        Some(Value::Object(m)) => m.clone(),
        None | Some(Value::Null) => Fields::new(),
        Some(_) => {
            return Err(format!(
                "the {event} event's `parameters` is not a JSON object"
            ))
        }
    };
    if kind.stage == Stage::Post {
        let servers = match tool {
            "access_mcp_resource" => {
                vec![fields::string(&params, "server_name", MAX_FIELD_BYTES, event)?.to_string()]
            }
            _ => fields::taints(&call(tool, &params, config, event)?.0, &WEB_TOOLS),
        };
        return Ok(Read::Taint { session, servers });
    }
    let (name, input) = call(tool, &params, config, event)?;
    Ok(Read::Call {
        session,
        cwd: fields::single_root(f, "workspaceRoots", event)?.map(str::to_string),
        shown: tool.to_string(),
        name,
        input,
    })
}

fn answer(_kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match reply {
        Reply::Allow | Reply::Done => json_line(&json!({"cancel": false}), 0),
        Reply::Ask(reason) | Reply::Block(reason) => {
            json_line(&json!({"cancel": true, "errorMessage": reason}), 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_calls_are_their_server_and_tool() {
        let c = HookConfig {
            builtin_server: "cline".into(),
            ..HookConfig::new("p.mcppol")
        };
        let p = json!({"server_name": "gh", "tool_name": "get", "arguments": "{\"n\":1}"});
        let (name, args) = call("use_mcp_tool", p.as_object().unwrap(), &c, "PreToolUse").unwrap();
        assert_eq!(name.readings()[0].server, "gh");
        assert_eq!(args, json!({"n": 1}));
        let (name, _) = call("gh__get", &Fields::new(), &c, "PreToolUse").unwrap();
        assert_eq!(name.readings()[0].tool, "get");
        let (name, _) = call("execute_command", &Fields::new(), &c, "PreToolUse").unwrap();
        assert_eq!(name.readings()[0].server, "cline");
    }

    #[test]
    fn every_refusal_cancels_on_exit_0() {
        for r in [Reply::Block("x".into()), Reply::Ask("y".into())] {
            let out = answer(None, &r);
            assert_eq!(out.status, 0);
            assert!(out.stdout.unwrap().starts_with("{\"cancel\":true"));
        }
    }
}
