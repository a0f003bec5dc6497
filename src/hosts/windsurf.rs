//! Windsurf's Cascade (`mcppol hook windsurf`).
//!
//! Cascade runs a hook with `{agent_action_name, trajectory_id,
//! execution_id, timestamp, tool_info}`: `pre_run_command` `tool_info
//! {command_line, cwd}`, `pre_read_code` `{file_path}`, `pre_write_code`
//! `{file_path, edits}`, `pre_mcp_tool_use` `{mcp_server_name,
//! mcp_tool_name, mcp_tool_arguments}`, and the `post_` forms after. Only a
//! pre-hook that exits 2 blocks; everything else runs the action. So every
//! refusal (an ask among them: its hooks cannot ask) is exit 2 with the
//! reason on stderr.
//!
//! The trajectory id keys taint. The file events give no working folder:
//! there `$CWD` is unknown and relative paths fail closed.

use serde_json::Value;

use super::fields::{self, Fields};
use super::{exit2, kind_by_field, silent, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::event::MAX_FIELD_BYTES;
use crate::claude::{HookConfig, HookOutput};

const fn pre(native: &'static str) -> Kind {
    Kind {
        native,
        stage: Stage::Pre,
        can_ask: false,
    }
}

const KINDS: [Kind; 5] = [
    pre("pre_run_command"),
    pre("pre_read_code"),
    pre("pre_write_code"),
    pre("pre_mcp_tool_use"),
    Kind {
        native: "post_mcp_tool_use",
        stage: Stage::Post,
        can_ask: false,
    },
];

/// Windsurf's hook.
pub static SPEC: Spec = Spec {
    host: Host::Windsurf,
    kind,
    read,
    answer,
    builtins: Builtins {
        paths: &[("read_code", "file_path"), ("write_code", "file_path")],
        reach,
    },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "agent_action_name", &KINDS, Host::Windsurf)
}

fn reach(tool: &str) -> Option<Reach> {
    match tool {
        "write_code" => Some(Reach::Write("file_path")),
        "run_command" => Some(Reach::Shell("command_line")),
        _ => None,
    }
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let session = fields::session(f, "trajectory_id", event)?.to_string();
    let info = fields::object(f, "tool_info", event)?;
    if kind.native.ends_with("mcp_tool_use") {
        let server = fields::string(info, "mcp_server_name", MAX_FIELD_BYTES, event)?;
        let tool = fields::tool_name(info, "mcp_tool_name", event)?;
        let name = fields::exact_mcp(server, tool)?;
        if kind.stage == Stage::Post {
            return Ok(Read::Taint {
                session,
                servers: vec![server.to_string()],
            });
        }
        return Ok(Read::Call {
            session,
            cwd: None,
            shown: format!("{server}/{tool}"),
            name,
            input: fields::arguments(info, "mcp_tool_arguments", event, true)?,
        });
    }
    // `pre_run_command` is `run_command`, and so on.
    let tool = kind.native.trim_start_matches("pre_");
    let cwd = match tool {
        "run_command" => fields::optional_cwd(info, "cwd", event)?.map(str::to_string),
        _ => None,
    };
    Ok(Read::Call {
        session,
        cwd,
        shown: tool.to_string(),
        name: fields::builtin(&config.builtin_server, tool),
        input: Value::Object(info.clone()),
    })
}

fn answer(_kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match reply {
        Reply::Allow | Reply::Done => silent(),
        Reply::Ask(reason) | Reply::Block(reason) => exit2(Host::Windsurf, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_events_have_no_cwd() {
        let c = HookConfig {
            builtin_server: "windsurf".into(),
            ..HookConfig::new("p.mcppol")
        };
        let f = json!({"agent_action_name": "pre_read_code", "trajectory_id": "t",
                       "tool_info": {"file_path": "a.rs"}});
        let f = f.as_object().unwrap();
        let Read::Call { cwd, name, .. } = read(kind(f).unwrap(), f, &c).unwrap() else {
            panic!("not a call")
        };
        assert_eq!(cwd, None);
        assert_eq!(name.readings()[0].tool, "read_code");
    }
}
