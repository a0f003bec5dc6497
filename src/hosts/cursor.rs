//! Cursor (`mcppol hook cursor`).
//!
//! Cursor runs a hook with `{hook_event_name, conversation_id,
//! generation_id, workspace_roots, ...}`: `beforeShellExecution`
//! `{command, cwd}`, `beforeReadFile` `{file_path, content}`,
//! `beforeMCPExecution` `{mcp_server_name, tool_name, tool_input}`
//! (`tool_input` an object or a JSON string), `preToolUse` `{tool_name,
//! tool_input}`, `afterMCPExecution` and `sessionEnd`. It blocks on exit 2
//! and on `{"permission": "deny"}`; `"ask"` asks (not on `beforeReadFile`);
//! other exits and bad JSON run the action unless the hook's entry says
//! `failClosed: true`, which `--print-settings` always writes. A decision is
//! JSON on exit 0; an input the hook cannot read is exit 2 with the deny
//! JSON.
//!
//! The policy sees `cursor/Shell` `{command, cwd}`, `cursor/Read`
//! `{file_path}` (not the file's content), `cursor/TOOL` for `preToolUse`,
//! and `SERVER/TOOL` for MCP calls; an MCP call without a server name is
//! blocked. The conversation id keys taint; `$CWD` is the command's `cwd`,
//! else the one workspace root.

use serde_json::{json, Map, Value};

use super::fields::{self, Fields};
use super::{json_line, kind_by_field, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::event::MAX_FIELD_BYTES;
use crate::claude::{HookConfig, HookOutput};

const KINDS: [Kind; 6] = [
    Kind {
        native: "beforeShellExecution",
        stage: Stage::Pre,
        can_ask: true,
    },
    Kind {
        native: "beforeReadFile",
        stage: Stage::Pre,
        can_ask: false,
    },
    Kind {
        native: "beforeMCPExecution",
        stage: Stage::Pre,
        can_ask: true,
    },
    Kind {
        native: "preToolUse",
        stage: Stage::Pre,
        can_ask: true,
    },
    Kind {
        native: "afterMCPExecution",
        stage: Stage::Post,
        can_ask: false,
    },
    Kind {
        native: "sessionEnd",
        stage: Stage::End,
        can_ask: false,
    },
];

/// Cursor's hook.
pub static SPEC: Spec = Spec {
    host: Host::Cursor,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[
            ("Read", "file_path"),
            ("Write", "file_path"),
            ("Edit", "file_path"),
        ],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "hook_event_name", &KINDS, Host::Cursor)
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "Write" | "Edit" => Some(Reach::Write("file_path")),
        "Shell" => Some(Reach::Shell("command")),
        _ => None,
    }
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let session = fields::session(f, "conversation_id", event)?.to_string();
    if kind.stage == Stage::End {
        return Ok(Read::End { session });
    }
    let root = fields::single_root(f, "workspace_roots", event)?;
    if kind.native.ends_with("MCPExecution") {
        let server = fields::string(f, "mcp_server_name", MAX_FIELD_BYTES, event)?;
        let tool = fields::tool_name(f, "tool_name", event)?;
        let name = fields::exact_mcp(server, tool)?;
        if kind.stage == Stage::Post {
            return Ok(Read::Taint {
                session,
                servers: vec![server.to_string()],
            });
        }
        return Ok(Read::Call {
            session,
            cwd: root.map(str::to_string),
            shown: format!("{server}/{tool}"),
            name,
            input: fields::arguments(f, "tool_input", event, true)?,
        });
    }
    let (tool, input, cwd) = match kind.native {
        "beforeShellExecution" => {
            let command =
                fields::string(f, "command", crate::claude::event::MAX_INPUT_BYTES, event)?;
            let cwd = fields::optional_cwd(f, "cwd", event)?.or(root);
            let mut args = Map::new();
            args.insert("command".into(), Value::String(command.to_string()));
            if let Some(cwd) = cwd {
                args.insert("cwd".into(), Value::String(cwd.to_string()));
            }
            ("Shell", Value::Object(args), cwd)
        }
        "beforeReadFile" => {
            let path = fields::string(f, "file_path", MAX_FIELD_BYTES, event)?;
            ("Read", json!({"file_path": path}), root)
        }
        _ => (
            fields::tool_name(f, "tool_name", event)?,
            fields::arguments(f, "tool_input", event, true)?,
            root,
        ),
    };
    Ok(Read::Call {
        session,
        cwd: cwd.map(str::to_string),
        shown: tool.to_string(),
        name: fields::builtin(&config.builtin_server, tool),
        input,
    })
}

fn deny(reason: &str) -> Value {
    json!({"permission": "deny", "user_message": reason, "agent_message": reason})
}

fn answer(kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match (kind, reply) {
        (_, Reply::Done) => json_line(&json!({}), 0),
        (_, Reply::Allow) => json_line(&json!({"permission": "allow"}), 0),
        (Some(_), Reply::Ask(reason)) => json_line(
            &json!({"permission": "ask", "user_message": reason, "agent_message": reason}),
            0,
        ),
        (Some(_), Reply::Block(reason)) => json_line(&deny(reason), 0),
        // An input that is not a known event: exit 2, which Cursor blocks
        // on whatever the entry says.
        (None, Reply::Ask(reason) | Reply::Block(reason)) => json_line(&deny(reason), 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> HookConfig {
        HookConfig {
            builtin_server: "cursor".into(),
            ..HookConfig::new("p.mcppol")
        }
    }

    #[test]
    fn shell_calls_carry_their_folder() {
        let f = json!({"hook_event_name": "beforeShellExecution", "conversation_id": "c",
                       "workspace_roots": ["/w"], "command": "ls"});
        let f = f.as_object().unwrap();
        let Read::Call {
            cwd, input, name, ..
        } = read(kind(f).unwrap(), f, &c()).unwrap()
        else {
            panic!("not a call")
        };
        assert_eq!(cwd.as_deref(), Some("/w"));
        assert_eq!(input, json!({"command": "ls", "cwd": "/w"}));
        assert_eq!(name.readings()[0].tool, "Shell");
    }

    #[test]
    fn an_mcp_call_needs_its_server() {
        let f = json!({"hook_event_name": "beforeMCPExecution", "conversation_id": "c",
                       "tool_name": "t", "tool_input": "{}"});
        let f = f.as_object().unwrap();
        assert!(read(kind(f).unwrap(), f, &c())
            .unwrap_err()
            .contains("mcp_server_name"));
    }
}
