//! Claude Code's permission hook: `mcppol claude-hook`.
//!
//! Claude Code runs a command hook for each event it is installed for,
//! with the event as JSON on stdin. This module turns one such event into
//! what the hook prints and its exit status:
//!
//! - `PreToolUse`: the policy decides the call (built-in tools as tools of
//!   the built-in server, MCP tools by their `mcp__SERVER__TOOL` name, with
//!   `tool_input` as the arguments, the session's taint and its `cwd`), and
//!   the hook prints `permissionDecision` `allow`, `ask` or `deny` with a
//!   reason.
//! - `PostToolUse` and `PostToolUseFailure`: the tool's server (`web` for
//!   `WebFetch` and `WebSearch`) is added to the session's taint.
//! - `SessionEnd`: the session's taint file is removed.
//!
//! It never fails open: Claude Code runs the tool when a hook exits with
//! anything but 0 or 2, so every failure (a policy that does not load,
//! input without the fields needed, a taint file that cannot be read, a
//! panic) ends in a `deny` printed with exit status 0 when the event is
//! known, and exit status 2 with the reason on stderr when it is not.
//!
//! Claude-style command hooks run inside the pipeline are
//! `crate::pipeline::command_hooks`.

pub mod checked;
pub mod decide;
pub mod event;
pub mod names;
pub mod place;
pub mod settings;
pub mod taint;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::enforce::audit::{AuditFile, AuditRecord};
use crate::enforce::{render, By, Outcome, Settled};
use crate::policy::{Cond, Test};
use crate::protected::Protected;
use crate::{Decision, LoadOptions, Policy, PolicySet, TargetKind, Verdict};
pub use decide::protected_write;
use event::{Event, EventKind};
use names::{ToolName, DEFAULT_BUILTIN_SERVER};
use taint::TaintStore;

/// What the hook is run with (its flags).
#[derive(Debug, Clone)]
pub struct HookConfig {
    /// The policy file.
    pub policy: PathBuf,
    /// Which policy of the file (needed when it holds several).
    pub name: Option<String>,
    /// The MCP server ids, to resolve names whose server holds `__`.
    pub servers: Vec<String>,
    /// The server the built-in tools belong to.
    pub builtin_server: String,
    /// Where session taint files live; `None` for the default
    /// ([`TaintStore::default_dir`]).
    pub state_dir: Option<PathBuf>,
    /// The audit file (`--audit`): one line per `PreToolUse` decided.
    pub audit: Option<PathBuf>,
    /// The home folder Claude Code expands `~` to (`HOME`, when absolute).
    pub home: Option<String>,
    /// The policy, already loaded (by `mcppol serve`'s store); `None`: the
    /// hook loads `policy` itself.
    pub preloaded: Option<std::sync::Arc<Policy>>,
    /// The budgets' counters (`mcppol serve`'s, shared by every hook call
    /// it answers); `None` for a hook run as its own process, which keeps
    /// no counters and so denies what a budget matches.
    pub budgets: Option<std::sync::Arc<dyn crate::Budgets>>,
    /// The bundle `preloaded` came from (`mcppol serve --bundle`): each
    /// audit line then names its revision and digest.
    pub bundle: Option<std::sync::Arc<crate::BundleStamp>>,
}

impl HookConfig {
    /// The hook run with `policy` and every other flag at its default.
    pub fn new(policy: impl Into<PathBuf>) -> Self {
        HookConfig {
            policy: policy.into(),
            name: None,
            servers: Vec::new(),
            builtin_server: DEFAULT_BUILTIN_SERVER.to_string(),
            state_dir: None,
            audit: None,
            home: place::home_from_env(),
            preloaded: None,
            budgets: None,
            bundle: None,
        }
    }

    /// What this hook protects whatever its policy says: the policy file,
    /// the `.mcppoltest` and lock files of its folder, the state folder and
    /// the audit file.
    pub fn protected(&self) -> Protected {
        let mut p = Protected::new();
        p.policy_file(&self.policy);
        let state = match &self.state_dir {
            Some(dir) => Some(dir.clone()),
            None => TaintStore::default_dir().ok(),
        };
        if let Some(dir) = state {
            p.folder(&dir);
        }
        // The audit trail is the hook's own record too.
        if let Some(audit) = &self.audit {
            p.file(audit);
        }
        p
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        let bad = |what: &str, id: &str| {
            format!(
                "{what} `{}` is not a server id (it must be non-empty and hold no `/`)",
                id.escape_debug()
            )
        };
        if self.builtin_server.is_empty() || self.builtin_server.contains('/') {
            return Err(bad("--builtin-server", &self.builtin_server));
        }
        if let Some(s) = self
            .servers
            .iter()
            .find(|s| s.is_empty() || s.contains('/'))
        {
            return Err(bad("--servers entry", s));
        }
        Ok(())
    }

    pub(crate) fn store(&self) -> Result<TaintStore, String> {
        match &self.state_dir {
            Some(dir) => Ok(TaintStore::new(dir)),
            None => TaintStore::default_dir().map(TaintStore::new),
        }
    }
}

/// What the hook prints and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    /// What the hook prints on stdout (one JSON line), if anything.
    pub stdout: Option<String>,
    /// What it prints on stderr, if anything.
    pub stderr: Option<String>,
    /// Its exit status: 0, or 2 to block.
    pub status: u8,
}

impl HookOutput {
    /// Nothing to say: exit status 0, no output.
    fn silent() -> Self {
        HookOutput {
            stdout: None,
            stderr: None,
            status: 0,
        }
    }

    /// Exit status 2 with the reason on stderr: Claude Code blocks a
    /// `PreToolUse` and shows the reason.
    fn blocked(reason: &str) -> Self {
        HookOutput {
            stdout: None,
            stderr: Some(format!("mcppol claude-hook: {reason}\n")),
            status: 2,
        }
    }

    /// A `PreToolUse` decision.
    fn permission(verdict: Verdict, reason: &str) -> Self {
        let out = json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": verdict.as_str(),
                "permissionDecisionReason": reason,
            }
        });
        HookOutput {
            stdout: Some(format!("{out}\n")),
            stderr: None,
            status: 0,
        }
    }

    /// How an event refuses when mcppol cannot do its part.
    fn failure(kind: EventKind, reason: &str) -> Self {
        match kind {
            EventKind::PreToolUse => {
                HookOutput::permission(Verdict::Deny, &render::hook_failed(reason))
            }
            EventKind::PostToolUse | EventKind::PostToolUseFailure => {
                let out = json!({
                    "decision": "block",
                    "reason": format!("mcppol could not record this tool's output in the session's taint: {reason}"),
                });
                HookOutput {
                    stdout: Some(format!("{out}\n")),
                    stderr: None,
                    status: 0,
                }
            }
            // SessionEnd blocks nothing; a taint file left behind only
            // keeps the session stricter.
            EventKind::SessionEnd => HookOutput::blocked(reason),
        }
    }
}

/// Handles one event read from stdin. Never panics: a panic inside is
/// caught and ends like any other failure.
pub fn run_hook(config: &HookConfig, input: &[u8]) -> HookOutput {
    let event = match catch_unwind(|| Event::parse(input)) {
        Ok(Ok(event)) => event,
        Ok(Err(e)) => return HookOutput::blocked(&e.to_string()),
        Err(payload) => return HookOutput::blocked(&panic_text(payload.as_ref())),
    };
    if event.kind != EventKind::PreToolUse {
        return guarded(event.kind, || handle(config, &event));
    }
    let mut record = None;
    let out = guarded(event.kind, || {
        let (out, line) = pre_tool_use(config, &event)?;
        record = Some(line);
        Ok(out)
    });
    let Some(path) = &config.audit else {
        return out;
    };
    // A call refused before the policy decided is audited too.
    let outcome = record.unwrap_or_else(|| failed(config, &event));
    match append_audit(path, &outcome, config.bundle.as_deref()) {
        Ok(()) => out,
        Err(e) => HookOutput::permission(
            Verdict::Deny,
            &render::hook_audit_failed(&path.display(), &e),
        ),
    }
}

/// The outcome of a tool call the policy decided: an ask is settled by the
/// host when `host_asks` (Claude Code asks the person and the hook never
/// learns the answer), and fails (a deny) when the host's hook cannot ask.
pub(crate) fn decided(
    server: &str,
    tool: &str,
    decision: &Decision,
    args: &serde_json::Value,
    host_asks: bool,
) -> Outcome {
    let settled = match decision.decision {
        Verdict::Ask if host_asks => Settled::Host,
        Verdict::Ask => Settled::Failed,
        _ => Settled::NotAsked,
    };
    Outcome::decided(
        server.into(),
        TargetKind::Tool,
        Some(tool),
        decision.clone(),
        settled,
    )
    .with_digest(crate::fingerprint::digest(args).ok())
}

/// The outcome of a call mcppol could not decide (and so denied): as much
/// of it as the event names.
fn failed(config: &HookConfig, event: &Event) -> Outcome {
    let reading = event.tool_name().ok().and_then(|n| {
        ToolName::parse(n, &config.servers, &config.builtin_server)
            .ok()
            .map(|t| t.readings()[0].clone())
    });
    let server = reading
        .as_ref()
        .map(|r| r.server.as_str())
        .unwrap_or_default();
    Outcome::refused(
        server.into(),
        TargetKind::Tool,
        reading.as_ref().map(|r| r.tool.as_str()),
        By::Hook,
        "hook_failed",
    )
    .with_digest(
        event
            .tool_input()
            .ok()
            .and_then(|a| crate::fingerprint::digest(a).ok()),
    )
}

/// Appends the audit line of `outcome` to `path` (created when missing),
/// naming the bundle the policy came from when there is one.
pub(crate) fn append_audit(
    path: &Path,
    outcome: &Outcome,
    bundle: Option<&crate::BundleStamp>,
) -> std::io::Result<()> {
    let record = AuditRecord::of(outcome)
        .with_bundle(bundle.map(|b| (b.revision.as_str(), b.digest.as_str())));
    AuditFile::open(path)?.append(&record)
}

/// Runs `f`; its error or panic becomes the event's failure output.
fn guarded(kind: EventKind, f: impl FnOnce() -> Result<HookOutput, String>) -> HookOutput {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(out)) => out,
        Ok(Err(reason)) => HookOutput::failure(kind, &reason),
        Err(payload) => HookOutput::failure(kind, &panic_text(payload.as_ref())),
    }
}

pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    format!("internal error (a panic: {what})")
}

fn handle(config: &HookConfig, event: &Event) -> Result<HookOutput, String> {
    match event.kind {
        EventKind::PreToolUse => pre_tool_use(config, event).map(|(out, _)| out),
        EventKind::PostToolUse | EventKind::PostToolUseFailure => post_tool_use(config, event),
        EventKind::SessionEnd => {
            let session = event.session_id()?;
            config.store()?.remove(session)?;
            Ok(HookOutput::silent())
        }
    }
}

fn post_tool_use(config: &HookConfig, event: &Event) -> Result<HookOutput, String> {
    let session = event.session_id()?;
    let tool_name = event.tool_name()?;
    config.check()?;
    let servers: Vec<String> = if names::RESOURCE_TOOLS.contains(&tool_name) {
        resource_taints(tool_name, event)
    } else {
        match ToolName::parse(tool_name, &config.servers, &config.builtin_server) {
            Ok(name) => name.taints().into_iter().map(str::to_string).collect(),
            // An MCP name with no server to name: its output taints under
            // the whole name, which is no server's own, so every `tainted`
            // test of the session counts it.
            Err(_) => vec![tool_name.to_string()],
        }
    };
    if servers.is_empty() {
        return Ok(HookOutput::silent());
    }
    let servers: Vec<&str> = servers.iter().map(String::as_str).collect();
    config.store()?.add(session, &servers)?;
    Ok(HookOutput::silent())
}

/// What `ReadMcpResourceTool` and `ListMcpResourcesTool` taint: the MCP
/// server whose resource text (or resource list) they bring into the
/// context, by their `server` argument, as written and as Claude Code
/// spells it in tool names (`my.server` is `my_server`). Without a
/// `server` (a listing of every server's resources) or with one that is
/// not a plain string, the output taints under the tool's whole name,
/// which is no server's own, so every `tainted` test of the session
/// counts it.
fn resource_taints(tool_name: &str, event: &Event) -> Vec<String> {
    let server = event
        .tool_input()
        .ok()
        .and_then(|i| i.get("server"))
        .and_then(|s| s.as_str())
        .filter(|s| !s.is_empty() && s.len() <= event::MAX_FIELD_BYTES);
    let Some(server) = server else {
        return vec![tool_name.to_string()];
    };
    let mut out = vec![server.to_string()];
    let spelled = names::mcp_spelling(server);
    if spelled != server {
        out.push(spelled);
    }
    out
}

/// Loads the policy the hook is run with.
pub fn load_policy(config: &HookConfig) -> Result<std::sync::Arc<Policy>, String> {
    if let Some(policy) = &config.preloaded {
        return Ok(std::sync::Arc::clone(policy));
    }
    let set = PolicySet::from_file(&config.policy, &LoadOptions::default())
        .map_err(|e| load_error(config, &e))?;
    pick(config, &set)
}

/// Why the hook's policy file does not load, in one line.
fn load_error(config: &HookConfig, e: &crate::LoadError) -> String {
    let file = config.policy.display();
    let Some(first) = e.diagnostics.first() else {
        return format!("the policy file `{file}` does not load");
    };
    if first.code == crate::diagnostics::codes::IO_READ {
        return format!("the policy does not load: {}", first.message);
    }
    let (line, column) = first.line_col();
    let more = match e.diagnostics.len() {
        1 => String::new(),
        n => format!(", and {} more", n - 1),
    };
    format!(
        "the policy file `{file}` does not load: {} at {file}:{line}:{column}{more} (run `mcppol check {file}`)",
        first.message
    )
}

/// The policy of `set` the hook is run with (`--name`).
fn pick(config: &HookConfig, set: &PolicySet) -> Result<std::sync::Arc<Policy>, String> {
    let policy = set
        .pick(config.name.as_deref())
        .map_err(|e| format!("{e} (policy file `{}`)", config.policy.display()))?;
    Ok(std::sync::Arc::clone(policy))
}

/// Whether any rule of the policy tests `tainted`.
pub fn uses_taint(policy: &Policy) -> bool {
    fn walk(cond: &Cond) -> bool {
        match cond {
            Cond::And(parts) | Cond::Or(parts) => parts.iter().any(walk),
            Cond::Not(inner) => walk(inner),
            Cond::Pred(p) => matches!(p.test, Test::Tainted { .. }),
        }
    }
    policy
        .all_rules()
        .any(|r| r.condition.as_ref().is_some_and(walk))
}

fn pre_tool_use(config: &HookConfig, event: &Event) -> Result<(HookOutput, Outcome), String> {
    let session = event.session_id()?;
    let cwd = event.cwd()?;
    let tool_name = event.tool_name()?;
    let raw_input = event.tool_input()?;
    config.check()?;
    let name = ToolName::parse(tool_name, &config.servers, &config.builtin_server)?;
    let call = decide::Call {
        session,
        cwd: Some(cwd),
        shown: tool_name,
        name: &name,
        input: raw_input,
        builtins: &decide::CLAUDE_BUILTINS,
        host: "Claude Code",
        host_asks: true,
    };
    let answer = decide::decide_call(config, &call)?;
    Ok((
        HookOutput::permission(answer.verdict, &answer.reason),
        answer.outcome,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_ends_in_the_events_refusal() {
        let out = guarded(EventKind::PreToolUse, || panic!("boom"));
        assert_eq!(out.status, 0);
        let v: serde_json::Value = serde_json::from_str(out.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecisionReason"],
            "mcppol could not decide this call, so it is denied: internal error (a panic: boom)"
        );
        let out = guarded(EventKind::PostToolUse, || {
            panic!("{}", String::from("bang"))
        });
        let v: serde_json::Value = serde_json::from_str(out.stdout.as_deref().unwrap()).unwrap();
        assert_eq!(v["decision"], "block");
        assert_eq!((out.status, out.stderr), (0, None));
        let out = guarded(EventKind::SessionEnd, || panic!("end"));
        assert_eq!(out.status, 2);
        assert!(out.stderr.unwrap().contains("a panic: end"));
    }

    #[test]
    fn config_ids_are_checked() {
        let mut c = HookConfig::new("p.mcppol");
        assert!(c.check().is_ok());
        c.builtin_server = "a/b".into();
        assert!(c.check().is_err());
        c.builtin_server = "claude".into();
        c.servers = vec!["ok".into(), String::new()];
        assert!(c.check().is_err());
    }

    #[test]
    fn taint_use_is_found_anywhere_in_a_condition() {
        let set = PolicySet::from_text(
            "p.mcppol",
            r#"policy a { allow "x/y" when args.n > 1 }
               policy b { deny "x/y" when not (args.n > 1 or tainted(ignore: ["w"])) }"#,
        )
        .unwrap();
        assert!(!uses_taint(set.get("a").unwrap()));
        assert!(uses_taint(set.get("b").unwrap()));
    }
}
