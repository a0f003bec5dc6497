//! Goose (`mcppol hook goose`).
//!
//! Goose's command hooks get Claude Code's shape (`hook_event_name`,
//! `session_id`, `cwd`, `tool_name`, `tool_input`; block/goose
//! crates/goose/src/hooks/types.rs); some releases name the folder
//! `working_dir`. Its tools are `EXTENSION__TOOL`: the built-in
//! `developer` extension's are the host's own (`developer__shell` is
//! `goose/shell`), every other extension's an MCP tool read as Claude
//! Code's. A tool is blocked by exit 2, or by `decision` exactly `"block"`
//! on stdout; any other output or exit runs it, and its hooks cannot ask.
//! So every refusal is exit 2 with the reason on stderr and the block JSON
//! on stdout.

use serde_json::json;

use super::fields::{self, Fields};
use super::{kind_by_field, silent, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
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
        native: "PostToolUseFailure",
        stage: Stage::Post,
        can_ask: false,
    },
    Kind {
        native: "SessionEnd",
        stage: Stage::End,
        can_ask: false,
    },
];

/// The extension whose tools are Goose's own.
const BUILTIN_EXTENSION: &str = "developer__";

/// Goose's hook.
pub static SPEC: Spec = Spec {
    host: Host::Goose,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[
            ("text_editor", "path"),
            ("write", "path"),
            ("edit", "path"),
            ("tree", "path"),
        ],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "hook_event_name", &KINDS, Host::Goose)
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "text_editor" | "write" | "edit" => Some(Reach::Write("path")),
        "shell" => Some(Reach::Shell("command")),
        _ => None,
    }
}

fn name(tool: &str, config: &HookConfig) -> Result<ToolName, String> {
    if let Some(own) = tool.strip_prefix(BUILTIN_EXTENSION) {
        return Ok(fields::builtin(&config.builtin_server, own));
    }
    if tool.contains("__") {
        return ToolName::parse(
            &format!("{MCP_PREFIX}{tool}"),
            &config.servers,
            &config.builtin_server,
        );
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
    let name = name(tool, config)?;
    if kind.stage == Stage::Post {
        return Ok(Read::Taint {
            session,
            servers: fields::taints(&name, &[]),
        });
    }
    let cwd = match fields::optional_cwd(f, "cwd", event)? {
        Some(cwd) => Some(cwd),
        None => fields::optional_cwd(f, "working_dir", event)?,
    };
    Ok(Read::Call {
        session,
        cwd: cwd.map(str::to_string),
        shown: tool.to_string(),
        input: fields::arguments(f, "tool_input", event, false)?,
        name,
    })
}

fn answer(_kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match reply {
        Reply::Allow | Reply::Done => silent(),
        Reply::Ask(reason) | Reply::Block(reason) => HookOutput {
            stdout: Some(format!(
                "{}\n",
                json!({"decision": "block", "reason": reason})
            )),
            stderr: Some(format!("mcppol hook goose: {reason}\n")),
            status: 2,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn developer_tools_are_goose_s_own() {
        let c = HookConfig {
            builtin_server: "goose".into(),
            ..HookConfig::new("p.mcppol")
        };
        let r = |n: &str| name(n, &c).unwrap().readings()[0].clone();
        assert_eq!(
            (r("developer__shell").server, r("developer__shell").tool),
            ("goose".into(), "shell".into())
        );
        assert_eq!(r("github__get_issue").server, "github");
        assert!(matches!(name("todo", &c).unwrap(), ToolName::Builtin(_)));
    }

    #[test]
    fn a_refusal_is_exit_2_and_block() {
        let out = answer(None, &Reply::Block("no".into()));
        assert_eq!(out.status, 2);
        assert!(out.stdout.unwrap().contains("\"decision\":\"block\""));
    }
}
