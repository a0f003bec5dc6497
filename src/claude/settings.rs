//! The `settings.json` block that installs `mcppol claude-hook` in Claude
//! Code (`mcppol claude-hook --print-settings`).

use serde_json::{json, Value};

/// Matches the tools whose output taints a session: every MCP tool,
/// `WebFetch` and `WebSearch`, and the built-in tools that read and list
/// MCP servers' resources.
pub const TAINT_MATCHER: &str =
    "mcp__.*|WebFetch|WebSearch|ReadMcpResourceTool|ListMcpResourcesTool";

/// How long Claude Code lets one hook run, in seconds. A hook that runs
/// longer is killed and the call goes ahead, so this is generous next to
/// the few milliseconds a decision takes and the 5 s the taint lock may be
/// waited for.
pub const TIMEOUT_SECS: u64 = 30;

/// The policy path used when `--print-settings` is given none: a file in
/// the project's `.claude` folder.
pub const DEFAULT_POLICY: &str = "\"$CLAUDE_PROJECT_DIR\"/.claude/policy.mcppol";

/// Quotes a word for `sh`: as it is when it holds only safe characters,
/// else in single quotes.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./,:=@%+".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The hook's command line: `exe claude-hook` and `args` (already quoted
/// for the shell), then `|| exit 2`, so that a binary that cannot be run
/// (moved, not executable, killed) still blocks the call instead of
/// letting it through.
pub fn command(exe: &str, args: &[String]) -> String {
    let mut out = format!("{} claude-hook", shell_quote(exe));
    for a in args {
        out.push(' ');
        out.push_str(a);
    }
    out.push_str(" || exit 2");
    out
}

/// The `settings.json` block for a hook command.
pub fn settings(command: &str) -> Value {
    let hook = json!([{ "type": "command", "command": command, "timeout": TIMEOUT_SECS }]);
    json!({
        "hooks": {
            "PreToolUse": [{ "matcher": "*", "hooks": hook }],
            "PostToolUse": [{ "matcher": TAINT_MATCHER, "hooks": hook }],
            "PostToolUseFailure": [{ "matcher": TAINT_MATCHER, "hooks": hook }],
            "SessionEnd": [{ "hooks": hook }],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_sh() {
        assert_eq!(shell_quote("/usr/bin/mcppol"), "/usr/bin/mcppol");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn the_command_fails_closed_when_it_cannot_run() {
        let c = command("/x y/mcppol", &["--policy".into(), DEFAULT_POLICY.into()]);
        assert_eq!(
            c,
            r#"'/x y/mcppol' claude-hook --policy "$CLAUDE_PROJECT_DIR"/.claude/policy.mcppol || exit 2"#
        );
        let s = settings(&c);
        assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(
            s["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
            c.as_str()
        );
        assert!(s["hooks"]["SessionEnd"][0].get("matcher").is_none());
    }
}
