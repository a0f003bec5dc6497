//! GitHub Copilot CLI (`mcppol hook copilot`).
//!
//! Copilot CLI's `preToolUse` hook gets `{timestamp, cwd, toolName,
//! toolArgs}` with `toolArgs` a JSON string (newer releases add
//! `sessionId`; its PascalCase `PreToolUse` form sends `hook_event_name`,
//! `session_id`, `tool_name`, `tool_input`). The camelCase payload does not
//! name its event, so the hook tells them apart by their fields: a
//! `toolResult` is `postToolUse`, a `toolName` without one `preToolUse`, a
//! `reason` without a tool `sessionEnd`.
//!
//! Only `permissionDecision: "deny"` on exit 0 blocks: a non-zero exit (2
//! included) and a timeout run the tool, and `ask` is not processed. So
//! every refusal, failures included, is exit 0 with a deny, and an ask is a
//! deny whose reason says how to let the call run.
//!
//! MCP tools are `SERVER-TOOL`: read every way (and as a built-in tool of
//! that name) unless `--servers` settles which server it is. Without a
//! session id, taint is kept per working folder, which can only make a
//! session stricter.

use serde_json::{json, Value};

use super::fields::{self, Fields};
use super::{json_line, unknown_event, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::names::{Reading, ToolName};
use crate::claude::{HookConfig, HookOutput};

const PRE: Kind = Kind {
    native: "preToolUse",
    stage: Stage::Pre,
    can_ask: false,
};
const POST: Kind = Kind {
    native: "postToolUse",
    stage: Stage::Post,
    can_ask: false,
};
const END: Kind = Kind {
    native: "sessionEnd",
    stage: Stage::End,
    can_ask: false,
};

/// The built-in tools whose output comes from the web.
const WEB_TOOLS: [&str; 1] = ["web_fetch"];

/// Copilot CLI's hook.
pub static SPEC: Spec = Spec {
    host: Host::Copilot,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[
            ("view", "path"),
            ("create", "path"),
            ("edit", "path"),
            ("str_replace", "path"),
        ],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    if let Some(name) = f.get("hook_event_name") {
        let name = name.as_str().unwrap_or_default();
        return match name {
            "PreToolUse" | "preToolUse" => Ok(PRE),
            "PostToolUse" | "postToolUse" => Ok(POST),
            "SessionEnd" | "sessionEnd" => Ok(END),
            _ => Err(unknown_event(
                Host::Copilot,
                name,
                &["preToolUse", "postToolUse", "sessionEnd"],
            )),
        };
    }
    match (f.contains_key("toolName"), f.contains_key("toolResult"), f.contains_key("reason")) {
        (true, true, _) => Ok(POST),
        (true, false, _) => Ok(PRE),
        (false, false, true) => Ok(END),
        _ => Err("the hook input is none of Copilot CLI's preToolUse, postToolUse or sessionEnd payloads (no `toolName`, no `reason`)".to_string()),
    }
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "create" | "edit" | "str_replace" => Some(Reach::Write("path")),
        "bash" => Some(Reach::Shell("command")),
        _ => None,
    }
}

/// `SERVER-TOOL` read every way; a name with no `-` is a built-in tool.
/// Unless `--servers` names the server, the built-in reading stays too,
/// and the strictest decision stands.
fn name(tool: &str, config: &HookConfig) -> ToolName {
    let builtin = Reading {
        server: config.builtin_server.clone(),
        tool: tool.to_string(),
    };
    let Some(mut readings) = fields::split_readings(tool, "-", &config.servers) else {
        return ToolName::Builtin(builtin);
    };
    if !readings.iter().any(|r| config.servers.contains(&r.server)) {
        readings.insert(0, builtin);
    }
    ToolName::Mcp(readings)
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let snake = f.contains_key("hook_event_name");
    let cwd = fields::optional_cwd(f, "cwd", event)?;
    let session = match ["sessionId", "session_id"]
        .into_iter()
        .find(|k| f.contains_key(*k))
    {
        Some(key) => fields::session(f, key, event)?.to_string(),
        None => match cwd {
            Some(cwd) => format!("copilot-cwd:{cwd}"),
            None => {
                return Err(format!(
                    "the {event} event has neither a session id nor a `cwd`"
                ))
            }
        },
    };
    if kind.stage == Stage::End {
        return Ok(Read::End { session });
    }
    let (name_key, args_key) = if snake {
        ("tool_name", "tool_input")
    } else {
        ("toolName", "toolArgs")
    };
    let tool = fields::tool_name(f, name_key, event)?;
    let name = name(tool, config);
    if kind.stage == Stage::Post {
        return Ok(Read::Taint {
            session,
            servers: fields::taints(&name, &WEB_TOOLS)
                .into_iter()
                .filter(|s| *s != config.builtin_server)
                .collect(),
        });
    }
    Ok(Read::Call {
        session,
        cwd: cwd.map(str::to_string),
        shown: tool.to_string(),
        input: fields::arguments(f, args_key, event, false)?,
        name,
    })
}

fn deny(reason: &str) -> Value {
    json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
}

fn answer(_kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match reply {
        Reply::Done => json_line(&json!({}), 0),
        Reply::Allow => json_line(&json!({"permissionDecision": "allow"}), 0),
        // Copilot runs the tool on any non-zero exit: every refusal is a
        // deny on exit 0.
        Reply::Ask(reason) | Reply::Block(reason) => json_line(&deny(reason), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: Value) -> Fields {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn events_are_told_apart_by_their_fields() {
        assert_eq!(
            kind(&f(json!({"toolName": "bash", "toolArgs": "{}"}))).unwrap(),
            PRE
        );
        assert_eq!(
            kind(&f(json!({"toolName": "bash", "toolResult": {}}))).unwrap(),
            POST
        );
        assert_eq!(kind(&f(json!({"reason": "complete"}))).unwrap(), END);
        assert_eq!(
            kind(&f(json!({"hook_event_name": "PreToolUse"}))).unwrap(),
            PRE
        );
        assert!(kind(&f(json!({"prompt": "hi"}))).is_err());
        assert!(kind(&f(json!({"hook_event_name": "Stop"}))).is_err());
    }

    #[test]
    fn dashed_names_read_every_way() {
        let mut c = HookConfig::new("p.mcppol");
        c.builtin_server = "copilot".into();
        let pairs = |c: &HookConfig, n: &str| -> Vec<String> {
            name(n, c)
                .readings()
                .iter()
                .map(|r| format!("{}/{}", r.server, r.tool))
                .collect()
        };
        assert_eq!(pairs(&c, "bash"), ["copilot/bash"]);
        assert_eq!(
            pairs(&c, "gh-get-issue"),
            ["copilot/gh-get-issue", "gh/get-issue", "gh-get/issue"]
        );
        c.servers = vec!["gh".into()];
        assert_eq!(pairs(&c, "gh-get-issue"), ["gh/get-issue"]);
    }

    #[test]
    fn every_refusal_is_a_deny_on_exit_0() {
        for r in [Reply::Block("x".into()), Reply::Ask("y".into())] {
            for k in [None, Some(PRE)] {
                let out = answer(k, &r);
                assert_eq!(out.status, 0);
                assert!(out
                    .stdout
                    .unwrap()
                    .contains("\"permissionDecision\":\"deny\""));
            }
        }
    }
}
