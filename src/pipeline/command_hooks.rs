//! Claude Code's command hooks, run inside mcppol's pipeline.
//!
//! A host that already has hooks written for Claude Code
//! (`{"hooks": {"PreToolUse": [{"matcher": "...", "hooks": [{"type":
//! "command", "command": "...", "timeout": 30}]}], "PostToolUse": [...]}}`)
//! loads them with [`parse_settings`] or [`load_settings`] and hands the
//! hooks to the pipeline. Each command runs with `sh -c`, the event JSON on
//! its stdin with the fields Claude Code sends (`tool_name` is
//! `mcp__SERVER__TOOL`), and answers as it would to Claude Code:
//!
//! - `PreToolUse` commands become before-hooks. Exit status 2 denies, with
//!   stderr as the reason; on exit status 0, a JSON object may deny
//!   (`permissionDecision: "deny"`, or `decision: "block"`), ask
//!   (`permissionDecision: "ask"` or `"defer"`: an allow from policy
//!   becomes an ask), rewrite the arguments (`updatedInput`; the policy then
//!   decides on the rewritten ones), or stop (`continue: false`, a deny).
//!   `permissionDecision: "allow"` allows nothing: policy is the only allow
//!   authority, so it reads as "no objection" and policy decides as if the
//!   hook had said nothing.
//! - `PostToolUse` commands become after-hooks, with `tool_response` (the
//!   result). Exit status 2 or `decision: "block"` replaces the result with
//!   an error carrying the reason; `updatedMCPToolOutput` replaces it;
//!   `additionalContext` is added to it as a text block.
//! - A timeout, a crash (a signal), an exit status other than 0 or 2,
//!   output that is neither empty nor a JSON object, a field of the wrong
//!   type or an unknown decision fails closed, as any hook does: a
//!   before-hook fails the call and nothing is sent; an after-hook
//!   withholds the result.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{json, Map, Value};

use crate::pipeline::{After, Before, Hook, HookCtx, HookError, Matcher, ToolCall, ToolResult};

/// The largest settings file read.
pub const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// The most commands one settings file may register.
pub const MAX_COMMANDS: usize = 256;

/// The most a command may print on stdout or stderr; more fails the hook.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// The longest `timeout` a settings file may give, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// How the commands run.
#[derive(Debug, Clone)]
pub struct CommandHookOptions {
    /// The working folder of the commands, the event's `cwd` and
    /// `CLAUDE_PROJECT_DIR`.
    pub cwd: PathBuf,
    /// The event's `session_id`.
    pub session_id: String,
    /// The event's `permission_mode`.
    pub permission_mode: String,
}

impl CommandHookOptions {
    /// Commands run in `cwd`, with a session id made of the process id.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        CommandHookOptions {
            cwd: cwd.into(),
            session_id: format!("mcppol-{}", std::process::id()),
            permission_mode: "default".to_string(),
        }
    }
}

/// A settings file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
#[non_exhaustive]
pub struct SettingsError {
    /// The settings file (or the origin name given for the text).
    pub origin: String,
    /// What is wrong with it, and how to fix it.
    pub message: String,
}

/// The events a settings file may give hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pre,
    Post,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Pre => "PreToolUse",
            Kind::Post => "PostToolUse",
        }
    }
}

/// One command of the settings.
#[derive(Debug)]
struct Command {
    id: String,
    kind: Kind,
    /// `None` matches every tool.
    matcher: Option<Regex>,
    command: String,
    options: Arc<CommandHookOptions>,
}

/// Reads a settings file.
pub fn load_settings(
    path: &Path,
    options: &CommandHookOptions,
) -> Result<Vec<Hook>, SettingsError> {
    let origin = path.display().to_string();
    let fail = |message: String| SettingsError {
        origin: origin.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(fail(format!(
            "it is {} bytes, more than the {} a settings file may have",
            meta.len(),
            MAX_SETTINGS_BYTES
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    parse_settings(&origin, &text, options)
}

/// Reads settings text; `origin` names it in errors.
pub fn parse_settings(
    origin: &str,
    text: &str,
    options: &CommandHookOptions,
) -> Result<Vec<Hook>, SettingsError> {
    let fail = |message: String| SettingsError {
        origin: origin.to_string(),
        message,
    };
    if text.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(fail(format!(
            "more than the {MAX_SETTINGS_BYTES} bytes a settings file may have"
        )));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| fail(format!("not JSON: {e}")))?;
    let events = match value.get("hooks") {
        Some(Value::Object(events)) => events,
        Some(_) => return Err(fail("`hooks` is not an object".into())),
        None => return Err(fail("no `hooks` object".into())),
    };
    let options = Arc::new(options.clone());
    let mut commands = Vec::new();
    for (event, groups) in events {
        let kind = match event.as_str() {
            "PreToolUse" => Kind::Pre,
            "PostToolUse" => Kind::Post,
            other => {
                return Err(fail(format!(
                    "hooks.{other}: mcppol runs PreToolUse and PostToolUse hooks only (remove the others from this file)"
                )))
            }
        };
        let Value::Array(groups) = groups else {
            return Err(fail(format!("hooks.{event} is not a list")));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event}[{g}]");
            let Value::Object(group) = group else {
                return Err(fail(format!("{at} is not an object")));
            };
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(m)) if m.is_empty() || m == "*" => None,
                Some(Value::String(m)) => Some(
                    regex::RegexBuilder::new(&format!("^(?:{m})$"))
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            let last = e.to_string();
                            let last = last.lines().last().unwrap_or("").trim().to_string();
                            fail(format!("{at}.matcher `{m}` is not a regex: {last}"))
                        })?,
                ),
                Some(_) => return Err(fail(format!("{at}.matcher is not a string"))),
            };
            let Some(Value::Array(hooks)) = group.get("hooks") else {
                return Err(fail(format!("{at}.hooks is missing or not a list")));
            };
            for (h, hook) in hooks.iter().enumerate() {
                let at = format!("{at}.hooks[{h}]");
                let Value::Object(hook) = hook else {
                    return Err(fail(format!("{at} is not an object")));
                };
                match hook.get("type").and_then(Value::as_str) {
                    Some("command") => {}
                    Some(other) => {
                        return Err(fail(format!(
                            "{at}: `{other}` hooks are not run by mcppol (only `command`)"
                        )))
                    }
                    None => return Err(fail(format!("{at}.type is missing"))),
                }
                let command = match hook.get("command") {
                    Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
                    _ => return Err(fail(format!("{at}.command is missing or empty"))),
                };
                let timeout = match hook.get("timeout") {
                    None | Some(Value::Null) => None,
                    Some(t) => match t.as_f64() {
                        Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS as f64 => {
                            Some(Duration::from_secs_f64(secs))
                        }
                        _ => {
                            return Err(fail(format!(
                                "{at}.timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}"
                            )))
                        }
                    },
                };
                if commands.len() == MAX_COMMANDS {
                    return Err(fail(format!("more than {MAX_COMMANDS} commands")));
                }
                let id = format!("claude:{event}[{g}].hooks[{h}]");
                commands.push((
                    Command {
                        id,
                        kind,
                        matcher: matcher.clone(),
                        command,
                        options: Arc::clone(&options),
                    },
                    timeout,
                ));
            }
        }
    }
    Ok(commands
        .into_iter()
        .map(|(c, timeout)| {
            let hook = to_hook(c);
            match timeout {
                Some(t) => hook.timeout(t),
                None => hook,
            }
        })
        .collect())
}

/// The name Claude Code gives an MCP tool.
pub fn claude_tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

fn to_hook(command: Command) -> Hook {
    let command = Arc::new(command);
    let id = command.id.clone();
    match command.kind {
        Kind::Pre => Hook::before(&id, Matcher::All, move |call: ToolCall, _ctx: HookCtx| {
            let command = Arc::clone(&command);
            async move { before(&command, call).await }
        }),
        Kind::Post => Hook::after(
            &id,
            Matcher::All,
            move |call: ToolCall, result: ToolResult, _ctx: HookCtx| {
                let command = Arc::clone(&command);
                async move { after(&command, call, result).await }
            },
        ),
    }
}

impl Command {
    fn matches(&self, tool_name: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(tool_name))
    }

    /// The event JSON, as Claude Code writes it.
    fn event(&self, call: &ToolCall, tool_name: &str, response: Option<Value>) -> Value {
        let mut event = json!({
            "session_id": self.options.session_id,
            "transcript_path": "",
            "cwd": self.options.cwd.to_string_lossy(),
            "permission_mode": self.options.permission_mode,
            "hook_event_name": self.kind.name(),
            "tool_name": tool_name,
            "tool_input": call.arguments,
            "tool_use_id": format!("mcppol_{}", call.call_id),
        });
        if let (Some(r), Value::Object(map)) = (response, &mut event) {
            map.insert("tool_response".into(), r);
        }
        event
    }
}

/// How a command ended.
enum Ended {
    /// Exit status 0 and what it printed (a JSON object, or nothing).
    Done(Option<Map<String, Value>>),
    /// Exit status 2 and its stderr.
    Blocked(String),
}

/// Runs the command with `event` on its stdin (the one runner,
/// `crate::enforce::command`); the process group is killed if the hook's
/// deadline passes first (the future is dropped).
async fn run(command: &Command, event: &Value) -> Result<Ended, HookError> {
    use crate::enforce::command::{self, ShCommand};
    let ran = command::run(ShCommand {
        text: &command.command,
        cwd: Some(&command.options.cwd),
        env: &[("CLAUDE_PROJECT_DIR", command.options.cwd.as_os_str())],
        input: event.to_string().into_bytes(),
        max_stdout: MAX_OUTPUT_BYTES,
        max_stderr: MAX_OUTPUT_BYTES,
    })
    .await
    .map_err(|e| HookError(e.to_string()))?;
    match ran.status.code() {
        Some(0) => {
            let text = String::from_utf8(ran.stdout)
                .map_err(|_| HookError("the command's output is not UTF-8".into()))?;
            if text.trim().is_empty() {
                return Ok(Ended::Done(None));
            }
            match serde_json::from_str::<Value>(text.trim()) {
                Ok(Value::Object(map)) => Ok(Ended::Done(Some(map))),
                _ => Err(HookError(
                    "the command's output is neither empty nor a JSON object".into(),
                )),
            }
        }
        Some(2) => Ok(Ended::Blocked(
            String::from_utf8_lossy(&ran.stderr).trim().to_string(),
        )),
        Some(code) => Err(HookError(format!("the command exited with status {code}"))),
        None => Err(HookError("the command was killed by a signal".into())),
    }
}

fn reason_or(reason: String, command: &Command) -> String {
    if reason.is_empty() {
        format!("hook `{}` blocked the call", command.id)
    } else {
        reason
    }
}

/// An optional string field.
fn string_field<'a>(map: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, HookError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(HookError(format!("`{key}` is not a string"))),
    }
}

/// `hookSpecificOutput`, checked to be for `event`.
fn specific<'a>(
    map: &'a Map<String, Value>,
    event: &str,
) -> Result<Option<&'a Map<String, Value>>, HookError> {
    match map.get("hookSpecificOutput") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(s)) => match string_field(s, "hookEventName")? {
            Some(name) if name != event => Err(HookError(format!(
                "`hookSpecificOutput` is for {name}, not {event}"
            ))),
            _ => Ok(Some(s)),
        },
        Some(_) => Err(HookError("`hookSpecificOutput` is not an object".into())),
    }
}

/// `continue: false` stops the call; its `stopReason` is the reason.
fn stopped(map: &Map<String, Value>) -> Result<Option<String>, HookError> {
    match map.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => Ok(None),
        Some(Value::Bool(false)) => Ok(Some(
            string_field(map, "stopReason")?
                .unwrap_or("a hook stopped the call")
                .to_string(),
        )),
        Some(_) => Err(HookError("`continue` is not a boolean".into())),
    }
}

async fn before(command: &Command, call: ToolCall) -> Result<Before, HookError> {
    let tool_name = claude_tool_name(&call.server, &call.name);
    if !command.matches(&tool_name) {
        return Ok(Before::Continue);
    }
    let event = command.event(&call, &tool_name, None);
    let map = match run(command, &event).await? {
        Ended::Blocked(reason) => return Ok(Before::Deny(reason_or(reason, command))),
        Ended::Done(None) => return Ok(Before::Continue),
        Ended::Done(Some(map)) => map,
    };
    if let Some(reason) = stopped(&map)? {
        return Ok(Before::Deny(reason));
    }
    let specific = specific(&map, "PreToolUse")?;
    let (decision, reason) = match specific {
        Some(s) => (
            string_field(s, "permissionDecision")?,
            string_field(s, "permissionDecisionReason")?,
        ),
        None => (None, None),
    };
    // The older top-level form: `decision` and `reason`.
    let legacy = string_field(&map, "decision")?;
    let reason = reason
        .or(string_field(&map, "reason")?)
        .unwrap_or_default()
        .to_string();
    let decision = match (decision, legacy) {
        (Some(d), _) => d,
        (None, Some("block")) => "deny",
        (None, Some("approve")) => "allow",
        (None, Some(d)) => d,
        (None, None) => "",
    };
    let rewrite = match specific.and_then(|s| s.get("updatedInput")) {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(ToolCall {
            arguments: v.clone(),
            ..call.clone()
        }),
        Some(_) => return Err(HookError("`updatedInput` is not a JSON object".into())),
    };
    match decision {
        "deny" => Ok(Before::Deny(reason_or(reason, command))),
        "ask" | "defer" => Ok(Before::Ask { reason, rewrite }),
        // `allow` allows nothing: policy decides, as after no answer.
        "allow" | "" => Ok(rewrite.map_or(Before::Continue, Before::Rewrite)),
        other => Err(HookError(format!(
            "`{}` is not a permission decision",
            other.escape_debug()
        ))),
    }
}

async fn after(command: &Command, call: ToolCall, result: ToolResult) -> Result<After, HookError> {
    let tool_name = claude_tool_name(&call.server, &call.name);
    if !command.matches(&tool_name) {
        return Ok(After::Continue);
    }
    let event = command.event(&call, &tool_name, Some(result.to_value()));
    let map = match run(command, &event).await? {
        Ended::Blocked(reason) => {
            return Ok(After::Replace(ToolResult::error_text(reason_or(
                reason, command,
            ))))
        }
        Ended::Done(None) => return Ok(After::Continue),
        Ended::Done(Some(map)) => map,
    };
    if let Some(reason) = stopped(&map)? {
        return Ok(After::Replace(ToolResult::error_text(reason)));
    }
    match string_field(&map, "decision")? {
        Some("block") | Some("deny") => {
            let reason = string_field(&map, "reason")?
                .unwrap_or_default()
                .to_string();
            return Ok(After::Replace(ToolResult::error_text(reason_or(
                reason, command,
            ))));
        }
        Some("approve") | Some("allow") | None => {}
        Some(other) => {
            return Err(HookError(format!(
                "`{}` is not a decision",
                other.escape_debug()
            )))
        }
    }
    let specific = specific(&map, "PostToolUse")?;
    let replaced = match specific.and_then(|s| {
        s.get("updatedMCPToolOutput")
            .or_else(|| s.get("updatedToolOutput"))
    }) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(ToolResult::text(text.clone())),
        Some(Value::Array(blocks)) => Some(ToolResult {
            content: blocks.clone(),
            ..ToolResult::default()
        }),
        Some(v @ Value::Object(_)) => Some(
            ToolResult::from_value(v.clone())
                .map_err(|e| HookError(format!("`updatedMCPToolOutput`: {e}")))?,
        ),
        Some(_) => {
            return Err(HookError(
                "`updatedMCPToolOutput` is not a result, a list of blocks or a text".into(),
            ))
        }
    };
    let context = match specific {
        Some(s) => string_field(s, "additionalContext")?,
        None => None,
    };
    let changed = replaced.is_some() || context.is_some();
    let mut out = replaced.unwrap_or(result);
    if let Some(text) = context {
        out.content.push(json!({"type": "text", "text": text}));
    }
    Ok(if changed {
        After::Replace(out)
    } else {
        After::Continue
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> CommandHookOptions {
        CommandHookOptions::new("/tmp")
    }

    fn err(text: &str) -> String {
        match parse_settings("s.json", text, &opts()) {
            Ok(_) => panic!("{text} loaded"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn settings_load_in_order() {
        let hooks = parse_settings(
            "s.json",
            r#"{"permissions": {}, "hooks": {
                "PreToolUse": [
                  {"matcher": "mcp__fs__.*", "hooks": [{"type": "command", "command": "a", "timeout": 30}]},
                  {"hooks": [{"type": "command", "command": "b"}, {"type": "command", "command": "c"}]}
                ],
                "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "d"}]}]
            }}"#,
            &opts(),
        )
        .unwrap();
        let ids: Vec<&str> = hooks.iter().map(|h| h.id()).collect();
        assert_eq!(
            ids,
            [
                "claude:PreToolUse[0].hooks[0]",
                "claude:PreToolUse[1].hooks[0]",
                "claude:PreToolUse[1].hooks[1]",
                "claude:PostToolUse[0].hooks[0]"
            ]
        );
    }

    #[test]
    fn bad_settings_are_named() {
        assert_eq!(
            err("{"),
            "s.json: not JSON: EOF while parsing an object at line 1 column 1"
        );
        assert_eq!(err("{}"), "s.json: no `hooks` object");
        assert!(err(r#"{"hooks": {"Stop": []}}"#)
            .contains("hooks.Stop: mcppol runs PreToolUse and PostToolUse hooks only"));
        assert_eq!(
            err(r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}"#),
            "s.json: hooks.PreToolUse[0].hooks[0]: `prompt` hooks are not run by mcppol (only `command`)"
        );
        assert!(
            err(r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#)
                .starts_with("s.json: hooks.PreToolUse[0].matcher `(` is not a regex")
        );
        assert_eq!(
            err(r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}"#),
            "s.json: hooks.PreToolUse[0].hooks[0].timeout must be a number of seconds above 0 and at most 3600"
        );
        assert_eq!(
            err(r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}}"#),
            "s.json: hooks.PreToolUse[0].hooks[0].command is missing or empty"
        );
        assert_eq!(
            err(r#"{"hooks": {"PreToolUse": [{"matcher": 1, "hooks": []}]}}"#),
            "s.json: hooks.PreToolUse[0].matcher is not a string"
        );
    }

    #[test]
    fn matchers_are_anchored_regexes_on_claude_names() {
        let c = |m: &str| Command {
            id: "x".into(),
            kind: Kind::Pre,
            matcher: Some(Regex::new(&format!("^(?:{m})$")).unwrap()),
            command: "true".into(),
            options: Arc::new(opts()),
        };
        assert!(c("mcp__fs__.*").matches("mcp__fs__read_file"));
        assert!(!c("mcp__fs__.*").matches("mcp__github__get"));
        assert!(c("mcp__fs__read_file|mcp__fs__write_file").matches("mcp__fs__write_file"));
        assert!(!c("read_file").matches("mcp__fs__read_file"));
        assert_eq!(claude_tool_name("my__srv", "do_it"), "mcp__my__srv__do_it");
    }
}
