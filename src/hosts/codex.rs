//! OpenAI Codex CLI (`mcppol hook codex`).
//!
//! Codex sends Claude Code's event shape (`hook_event_name`, `session_id`,
//! `cwd`, `tool_name`, `tool_input`, plus its own `turn_id`): every shell
//! command as `Bash` `{command}`, a patch as `apply_patch` `{command: the
//! patch}`, MCP tools as `mcp__SERVER__TOOL`. Its `PreToolUse` cannot ask
//! (`permissionDecision: "ask"` is rejected and the call runs), it runs the
//! call on exit 2 with an empty stderr, on any other exit and on JSON with
//! a field it does not know; it blocks on exit 2 with a reason on stderr.
//! So a deny (and an ask, and every failure) is exit 2 with the reason on
//! stderr, and an allow is no output at all, so that Codex's own approvals
//! still apply. `PostToolUse` records taint; Codex has no session-end
//! event.

use super::fields::{self, Fields};
use super::{exit2, kind_by_field, silent, Host, Kind, Read, Reply, Spec, Stage};
use crate::claude::decide::{Builtins, Reach};
use crate::claude::names::ToolName;
use crate::claude::{HookConfig, HookOutput};

const KINDS: [Kind; 2] = [
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
];

/// Codex's hook.
pub static SPEC: Spec = Spec {
    host: Host::Codex,
    kind,
    read,
    answer,
    builtins: Builtins { paths: &[], reach },
};

fn kind(f: &Fields) -> Result<Kind, String> {
    kind_by_field(f, "hook_event_name", &KINDS, Host::Codex)
}

fn reach(tool: &str) -> Option<Reach> {
    // A patch names the files it writes in its text: the same check as a
    // command line's.
    matches!(tool, "Bash" | "apply_patch").then_some(Reach::Shell("command"))
}

fn read(kind: Kind, f: &Fields, config: &HookConfig) -> Result<Read, String> {
    let event = kind.native;
    let session = fields::session(f, "session_id", event)?.to_string();
    let tool = fields::tool_name(f, "tool_name", event)?;
    let name = ToolName::parse(tool, &config.servers, &config.builtin_server)?;
    match kind.stage {
        Stage::Pre => Ok(Read::Call {
            session,
            cwd: Some(
                fields::string(f, "cwd", crate::claude::event::MAX_FIELD_BYTES, event)?.to_string(),
            ),
            shown: tool.to_string(),
            input: fields::arguments(f, "tool_input", event, false)?,
            name,
        }),
        _ => Ok(Read::Taint {
            session,
            servers: fields::taints(&name, &[]),
        }),
    }
}

fn answer(_kind: Option<Kind>, reply: &Reply) -> HookOutput {
    match reply {
        Reply::Allow | Reply::Done => silent(),
        Reply::Ask(reason) | Reply::Block(reason) => exit2(Host::Codex, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_exit_2_with_a_reason() {
        for reply in [Reply::Block("no".into()), Reply::Ask("ask".into())] {
            let out = answer(Some(KINDS[0]), &reply);
            assert_eq!(out.status, 2);
            assert!(out.stdout.is_none());
            assert!(out.stderr.unwrap().starts_with("mcppol hook codex: "));
        }
        assert_eq!(answer(Some(KINDS[0]), &Reply::Allow), silent());
    }
}
