//! `mcppol hook HOST`: one policy for every agent host that runs a command
//! hook before a tool call.
//!
//! Each host has its own module: what its events look like (read bounded,
//! field by field), what its tool names mean, where its working folder
//! and session id come from, and the answer it really blocks on. Nothing
//! else is per host: every call is decided by
//! [`crate::claude::decide::decide_call`], the path `mcppol claude-hook`
//! takes, with the same fixed `protected` rule, the same per-session taint
//! file, the same audit line and the same panic-as-block guard. A host
//! module maps the one answer to its wire form and decides nothing itself.
//!
//! Every failure (input that is not JSON, too large, an unknown event, a
//! field missing, a policy that does not load, a panic) ends in the host's
//! blocking form, never in one of its fail-open paths. docs/hosts.md has
//! each host's contract and the sources it was read from.

pub mod cline;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod fields;
pub mod gemini;
pub mod goose;
pub mod settings;
pub mod windsurf;

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;

use crate::claude::decide::{decide_call, Builtins, Call};
use crate::claude::event::MAX_INPUT_BYTES;
use crate::claude::names::ToolName;
use crate::claude::{append_audit, panic_text, HookConfig, HookOutput};
use crate::enforce::{render, By, Outcome};
use crate::{TargetKind, Verdict};
use fields::Fields;

/// The agent hosts `mcppol hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code (the same as `mcppol claude-hook`).
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Cursor.
    Cursor,
    /// Gemini CLI.
    Gemini,
    /// GitHub Copilot CLI.
    Copilot,
    /// Cline.
    Cline,
    /// Goose.
    Goose,
    /// Windsurf (Cascade).
    Windsurf,
}

impl Host {
    /// Every host, in the order the docs list them.
    pub const ALL: [Host; 8] = [
        Host::Claude,
        Host::Codex,
        Host::Cursor,
        Host::Gemini,
        Host::Copilot,
        Host::Cline,
        Host::Goose,
        Host::Windsurf,
    ];

    /// The host's name on the command line, and its default built-in
    /// server.
    pub fn as_str(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Cursor => "cursor",
            Host::Gemini => "gemini",
            Host::Copilot => "copilot",
            Host::Cline => "cline",
            Host::Goose => "goose",
            Host::Windsurf => "windsurf",
        }
    }

    /// The host named `name`.
    pub fn from_name(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.as_str() == name)
    }

    /// The host's module, `None` for Claude Code (whose hook is
    /// `crate::claude`).
    pub fn spec(self) -> Option<&'static Spec> {
        match self {
            Host::Claude => None,
            Host::Codex => Some(&codex::SPEC),
            Host::Cursor => Some(&cursor::SPEC),
            Host::Gemini => Some(&gemini::SPEC),
            Host::Copilot => Some(&copilot::SPEC),
            Host::Cline => Some(&cline::SPEC),
            Host::Goose => Some(&goose::SPEC),
            Host::Windsurf => Some(&windsurf::SPEC),
        }
    }
}

/// What an event asks of the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before a tool runs: the policy decides.
    Pre,
    /// After a tool ran: its server's output is now in the context.
    Post,
    /// The session ended: its taint file is removed.
    End,
}

/// One of a host's events, known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The host's own name for the event.
    pub native: &'static str,
    /// What it asks.
    pub stage: Stage,
    /// Whether the host's answer to it can ask a person.
    pub can_ask: bool,
}

/// What an event says, read.
#[derive(Debug)]
pub enum Read {
    /// A tool call to decide.
    Call {
        /// The session that keys taint.
        session: String,
        /// The working folder, when the event gives one.
        cwd: Option<String>,
        /// The tool's name as the host sent it.
        shown: String,
        /// What the name stands for.
        name: ToolName,
        /// The arguments.
        input: Value,
    },
    /// Servers whose output entered the session's context.
    Taint {
        /// The session.
        session: String,
        /// The servers (may be empty: nothing to record).
        servers: Vec<String>,
    },
    /// The session ended.
    End {
        /// The session.
        session: String,
    },
}

/// What the hook answers, before the host's wire form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Proceed as the host does by itself.
    Allow,
    /// Ask a person (only where the event's answer can).
    Ask(String),
    /// Block, with the reason.
    Block(String),
    /// Nothing to decide (a post-tool or session-end event handled).
    Done,
}

/// One host's hook: how to know its events, read them and answer.
#[derive(Debug)]
pub struct Spec {
    /// The host.
    pub host: Host,
    /// The event `fields` is, or why it is none the hook handles.
    pub kind: fn(&Fields) -> Result<Kind, String>,
    /// What the event says; `config` gives `--servers` and the built-in
    /// server.
    pub read: fn(Kind, &Fields, &HookConfig) -> Result<Read, String>,
    /// The wire form of a reply to an event of `kind` (`None`: an input
    /// whose event is not known).
    pub answer: fn(Option<Kind>, &Reply) -> HookOutput,
    /// The host's built-in tools.
    pub builtins: Builtins,
}

/// Handles one event of `spec`'s host read from stdin. Never panics; never
/// fails open.
pub fn run(spec: &Spec, config: &HookConfig, input: &[u8]) -> HookOutput {
    let refuse = |kind: Option<Kind>, why: &str| {
        (spec.answer)(kind, &Reply::Block(render::hook_failed(why)))
    };
    let parsed =
        catch_unwind(|| parse_object(input, spec)).unwrap_or_else(|p| Err(panic_text(p.as_ref())));
    let (fields, kind) = match parsed {
        Ok(v) => v,
        Err(why) => return refuse(None, &why),
    };
    let mut record: Option<Outcome> = None;
    let mut named: Option<(String, String, Option<String>)> = None;
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<HookOutput, String> {
        match (spec.read)(kind, &fields, config)? {
            Read::Call {
                session,
                cwd,
                shown,
                name,
                input,
            } => {
                let first = &name.readings()[0];
                named = Some((
                    first.server.clone(),
                    first.tool.clone(),
                    crate::fingerprint::digest(&input).ok(),
                ));
                let call = Call {
                    session: &session,
                    cwd: cwd.as_deref(),
                    shown: &shown,
                    name: &name,
                    input: &input,
                    builtins: &spec.builtins,
                    host: spec.host.as_str(),
                    host_asks: kind.can_ask,
                };
                let answer = decide_call(config, &call)?;
                let reply = match answer.verdict {
                    Verdict::Allow => Reply::Allow,
                    Verdict::Ask => Reply::Ask(answer.reason),
                    Verdict::Deny => Reply::Block(answer.reason),
                };
                record = Some(answer.outcome);
                Ok((spec.answer)(Some(kind), &reply))
            }
            Read::Taint { session, servers } => {
                if !servers.is_empty() {
                    let refs: Vec<&str> = servers.iter().map(String::as_str).collect();
                    config.store()?.add(&session, &refs)?;
                }
                Ok((spec.answer)(Some(kind), &Reply::Done))
            }
            Read::End { session } => {
                config.store()?.remove(&session)?;
                Ok((spec.answer)(Some(kind), &Reply::Done))
            }
        }
    }));
    let out = match result {
        Ok(Ok(out)) => out,
        Ok(Err(why)) => refuse(Some(kind), &why),
        Err(payload) => refuse(Some(kind), &panic_text(payload.as_ref())),
    };
    let (Some(path), Stage::Pre) = (&config.audit, kind.stage) else {
        return out;
    };
    // A call refused before the policy decided is audited too.
    let outcome = record.unwrap_or_else(|| {
        let (server, tool, digest) = named.unwrap_or_default();
        Outcome::refused(
            server.as_str().into(),
            TargetKind::Tool,
            (!tool.is_empty()).then_some(tool.as_str()),
            By::Hook,
            "hook_failed",
        )
        .with_digest(digest)
    });
    match append_audit(path, &outcome, config.bundle.as_deref()) {
        Ok(()) => out,
        Err(e) => (spec.answer)(
            Some(kind),
            &Reply::Block(render::hook_audit_failed(&path.display(), &e)),
        ),
    }
}

/// The host's block for an input mcppol refuses before reading it (`why`
/// says why): what `mcppol serve` answers a hook request without a valid
/// token.
#[cfg(feature = "http")]
pub fn refuse(spec: &Spec, why: &str) -> HookOutput {
    (spec.answer)(None, &Reply::Block(render::hook_failed(why)))
}

/// The bytes as a JSON object, and the event it is.
fn parse_object(input: &[u8], spec: &Spec) -> Result<(Fields, Kind), String> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "the hook input is larger than {} MiB",
            MAX_INPUT_BYTES >> 20
        ));
    }
    let value: Value =
        serde_json::from_slice(input).map_err(|e| format!("the hook input is not JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("the hook input is not a JSON object".to_string());
    };
    let kind = (spec.kind)(&fields)?;
    Ok((fields, kind))
}

/// The error for an event name a host's hook does not handle; `known`
/// lists those it does.
pub(crate) fn unknown_event(host: Host, name: &str, known: &[&str]) -> String {
    let shown: String = name.chars().take(64).collect();
    format!(
        "`{}` is not an event mcppol hook {} handles ({}); install it with the block that `mcppol hook {} --print-settings` prints",
        shown.escape_debug(),
        host.as_str(),
        known.join(", "),
        host.as_str()
    )
}

/// The event named by string field `key`, looked up in `kinds`.
pub(crate) fn kind_by_field(
    fields: &Fields,
    key: &str,
    kinds: &[Kind],
    host: Host,
) -> Result<Kind, String> {
    let name = match fields.get(key) {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(format!("the hook input has no `{key}`")),
    };
    kinds
        .iter()
        .find(|k| k.native == name)
        .copied()
        .ok_or_else(|| {
            let known: Vec<&str> = kinds.iter().map(|k| k.native).collect();
            unknown_event(host, name, &known)
        })
}

/// Exit status 2 with `text` on stderr (and nothing on stdout).
pub(crate) fn exit2(host: Host, text: &str) -> HookOutput {
    HookOutput {
        stdout: None,
        stderr: Some(format!("mcppol hook {}: {text}\n", host.as_str())),
        status: 2,
    }
}

/// Exit status 0 and one JSON line on stdout.
pub(crate) fn json_line(value: &Value, status: u8) -> HookOutput {
    HookOutput {
        stdout: Some(format!("{value}\n")),
        stderr: None,
        status,
    }
}

/// Exit status 0, no output.
pub(crate) fn silent() -> HookOutput {
    HookOutput {
        stdout: None,
        stderr: None,
        status: 0,
    }
}
