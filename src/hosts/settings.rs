//! `mcppol hook HOST --print-settings`: the block that installs the hook in
//! each host, in its file, with its matcher syntax and timeout key, and a
//! guard so that a binary that cannot run blocks the call in the host's
//! own blocking form instead of failing open.

use serde_json::{json, Value};

use super::Host;
use crate::claude::settings::shell_quote;

/// How long a host lets the hook run, in seconds (see
/// `crate::claude::settings::TIMEOUT_SECS`).
pub const TIMEOUT_SECS: u64 = 30;

/// What to print: the file it goes in, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// Where the host reads it (relative to the project, or `~`).
    pub file: &'static str,
    /// The file's text (JSON, or a script for Cline).
    pub text: String,
}

/// The command line a host runs: `exe hook HOST` and `args` (already
/// quoted for the shell), then the guard for a binary that cannot run.
pub fn command(exe: &str, host: Host, args: &[String]) -> String {
    let mut out = format!("{} hook {}", shell_quote(exe), host.as_str());
    for a in args {
        out.push(' ');
        out.push_str(a);
    }
    out.push_str(" || ");
    out.push_str(&guard(host));
    out
}

/// What the shell runs when mcppol itself cannot: the host's block.
fn guard(host: Host) -> String {
    let say = |v: Value| format!("printf '%s\\n' {}", shell_quote(&v.to_string()));
    match host {
        // A non-zero exit runs the tool: the guard prints a deny.
        Host::Copilot => say(json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": "mcppol could not run, so the call is denied"
        })),
        // Only `cancel: true` stops a tool.
        Host::Cline => say(json!({
            "cancel": true,
            "errorMessage": "mcppol could not run, so the call is cancelled"
        })),
        _ => "exit 2".to_string(),
    }
}

/// The install block for `host` running `command`.
pub fn install(host: Host, command: &str) -> Install {
    let hook =
        |timeout: Value| json!([{ "type": "command", "command": command, "timeout": timeout }]);
    let secs = json!(TIMEOUT_SECS);
    let (file, value) = match host {
        Host::Claude => (
            ".claude/settings.json",
            crate::claude::settings::settings(command),
        ),
        Host::Codex => (
            ".codex/hooks.json",
            json!({"hooks": {
                "PreToolUse": [{ "hooks": hook(secs.clone()) }],
                "PostToolUse": [{ "matcher": "mcp__.*", "hooks": hook(secs) }],
            }}),
        ),
        Host::Gemini => {
            // Gemini's timeout is in milliseconds.
            let ms = json!(TIMEOUT_SECS * 1000);
            (
                ".gemini/settings.json",
                json!({"hooks": {
                    "BeforeTool": [{ "matcher": ".*", "hooks": hook(ms.clone()) }],
                    "AfterTool": [{ "matcher": "mcp_.*|web_fetch|google_web_search", "hooks": hook(ms.clone()) }],
                    "SessionEnd": [{ "hooks": hook(ms) }],
                }}),
            )
        }
        Host::Copilot => {
            let entry = json!([{ "type": "command", "bash": command, "timeoutSec": TIMEOUT_SECS }]);
            (
                ".github/hooks/mcppol.json",
                json!({"version": 1, "hooks": {
                    "preToolUse": entry.clone(),
                    "postToolUse": entry.clone(),
                    "sessionEnd": entry,
                }}),
            )
        }
        Host::Cline => {
            let text = format!(
                "#!/bin/sh\n# Save as .clinerules/hooks/PreToolUse, and the same text as PostToolUse,\n# TaskComplete and TaskCancel; make each executable (chmod +x).\n{command}\n"
            );
            return Install {
                file: ".clinerules/hooks/PreToolUse",
                text,
            };
        }
        Host::Goose => (
            "~/.config/goose/hooks.json",
            json!({"hooks": {
                "PreToolUse": [{ "hooks": hook(secs.clone()) }],
                "PostToolUse": [{ "hooks": hook(secs.clone()) }],
                "PostToolUseFailure": [{ "hooks": hook(secs.clone()) }],
                "SessionEnd": [{ "hooks": hook(secs) }],
            }}),
        ),
        Host::Windsurf => {
            let entry = json!([{ "command": command, "show_output": true }]);
            (
                ".windsurf/hooks.json",
                json!({"hooks": {
                    "pre_run_command": entry.clone(),
                    "pre_read_code": entry.clone(),
                    "pre_write_code": entry.clone(),
                    "pre_mcp_tool_use": entry.clone(),
                    "post_mcp_tool_use": entry,
                }}),
            )
        }
        Host::Cursor => {
            // `failClosed`: a crash, a timeout or bad JSON blocks.
            let entry =
                json!([{ "command": command, "failClosed": true, "timeout": TIMEOUT_SECS }]);
            (
                ".cursor/hooks.json",
                json!({"version": 1, "hooks": {
                    "beforeShellExecution": entry.clone(),
                    "beforeReadFile": entry.clone(),
                    "beforeMCPExecution": entry.clone(),
                    "preToolUse": entry.clone(),
                    "afterMCPExecution": entry.clone(),
                    "sessionEnd": entry,
                }}),
            )
        }
    };
    let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
    Install {
        file,
        text: format!("{text}\n"),
    }
}

/// The install block that sends `host`'s hook events to `mcppol serve` at
/// `base` (`POST BASE/v1/hooks/HOST`), for the hosts whose hooks can call a
/// URL: Claude Code's `http` handler. `None` for the others.
pub fn http_install(host: Host, base: &str) -> Option<Install> {
    if host != Host::Claude {
        return None;
    }
    let url = format!("{}/v1/hooks/{}", base.trim_end_matches('/'), host.as_str());
    let hook = json!([{ "type": "http", "url": url, "timeout": TIMEOUT_SECS }]);
    let matcher = crate::claude::settings::TAINT_MATCHER;
    let value = json!({"hooks": {
        "PreToolUse": [{ "matcher": "*", "hooks": hook }],
        "PostToolUse": [{ "matcher": matcher, "hooks": hook }],
        "PostToolUseFailure": [{ "matcher": matcher, "hooks": hook }],
        "SessionEnd": [{ "hooks": hook }],
    }});
    let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
    Some(Install {
        file: ".claude/settings.json",
        text: format!("{text}\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_block_in_each_host_s_form() {
        let c = command(
            "/bin/mcppol",
            Host::Codex,
            &["--policy".into(), "/p".into()],
        );
        assert_eq!(c, "/bin/mcppol hook codex --policy /p || exit 2");
        let c = command("/bin/mcppol", Host::Copilot, &[]);
        assert!(c.ends_with(r#"|| printf '%s\n' '{"permissionDecision":"deny","permissionDecisionReason":"mcppol could not run, so the call is denied"}'"#), "{c}");
        assert!(command("m", Host::Cline, &[]).contains("\"cancel\":true"));
    }

    #[test]
    fn every_host_has_an_install_block() {
        for host in Host::ALL {
            let i = install(host, "CMD");
            assert!(i.text.contains("CMD"), "{host:?}");
            if host != Host::Cline {
                let v: Value = serde_json::from_str(&i.text).unwrap();
                assert!(v["hooks"].is_object(), "{host:?}");
            }
        }
        let cursor: Value = serde_json::from_str(&install(Host::Cursor, "CMD").text).unwrap();
        assert_eq!(
            cursor["hooks"]["beforeShellExecution"][0]["failClosed"],
            true
        );
    }
}
