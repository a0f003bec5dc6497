//! The one way a hook decides a tool call: `mcppol claude-hook` and every
//! `mcppol hook HOST` hand the call they read here (a session, a working
//! folder, the tool's readings and its arguments) and map what comes back
//! to their host's answer. The fixed `protected` rule, path placement,
//! the session's taint and the policy's decision (the strictest over every
//! reading of an ambiguous name) are all here and nowhere else.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::names::ToolName;
use super::{decided, place, uses_taint, HookConfig};
use crate::enforce::{render, Outcome};
use crate::protected::Protected;
use crate::{Decision, Links, Request, Verdict};

/// How a built-in tool can reach a file the hook protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// It writes the file whose path is in this argument.
    Write(&'static str),
    /// It runs the shell command line in this argument.
    Shell(&'static str),
}

/// What a host's built-in tools are: which argument holds each one's path
/// (placed before the policy sees it) and which of them can reach a
/// protected file.
#[derive(Debug, Clone, Copy)]
pub struct Builtins {
    /// `(tool, argument)`: the tools that take a path, and where.
    pub paths: &'static [(&'static str, &'static str)],
    /// How built-in tool `tool` reaches a protected file, if it can.
    pub reach: fn(&str) -> Option<Reach>,
}

impl Builtins {
    /// The argument holding built-in tool `tool`'s path, if it takes one.
    pub fn path_argument(&self, tool: &str) -> Option<&'static str> {
        self.paths
            .iter()
            .find(|(t, _)| *t == tool)
            .map(|(_, arg)| *arg)
    }
}

/// Claude Code's built-in tools.
pub const CLAUDE_BUILTINS: Builtins = Builtins {
    paths: place::PATH_ARGUMENTS,
    reach: claude_reach,
};

fn claude_reach(tool: &str) -> Option<Reach> {
    if place::WRITE_TOOLS.contains(&tool) {
        return place::path_argument(tool).map(Reach::Write);
    }
    (tool == "Bash").then_some(Reach::Shell("command"))
}

/// One tool call a host asks about, as the hook read it.
#[derive(Debug)]
pub struct Call<'a> {
    /// The session (or conversation, task, trajectory) that keys taint.
    pub session: &'a str,
    /// The working folder: `$CWD` and what relative paths are under.
    /// `None` when the host's event does not say: `$CWD` tests and
    /// relative paths fail closed.
    pub cwd: Option<&'a str>,
    /// The tool's name as the host sent it (for reasons).
    pub shown: &'a str,
    /// What the name stands for.
    pub name: &'a ToolName,
    /// The arguments as the host sent them.
    pub input: &'a Value,
    /// The host's built-in tools.
    pub builtins: &'a Builtins,
    /// The host's name, for reasons.
    pub host: &'a str,
    /// Whether the host's answer to this event can ask a person; when it
    /// cannot, an `ask` is a deny whose reason says how to let it run.
    pub host_asks: bool,
}

/// The policy's answer to a call: the verdict, the reason a person and the
/// model read, and the outcome the audit records.
#[derive(Debug)]
pub struct Answer {
    /// Allow, ask or deny.
    pub verdict: Verdict,
    /// Why, in the words of `crate::enforce::render`.
    pub reason: String,
    /// What the audit line records.
    pub outcome: Outcome,
}

fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    }
}

/// Decides one call: the fixed `protected` rule first, then the policy with
/// the session's taint, the strictest decision over every reading.
pub fn decide_call(config: &HookConfig, call: &Call<'_>) -> Result<Answer, String> {
    config.check()?;
    let home = config.home.as_deref();
    // A built-in tool's path, placed as the host will place it. Without a
    // working folder, a relative path cannot be placed and fails closed.
    let input: Cow<'_, Value> = match call.name {
        ToolName::Builtin(r) => match call.builtins.path_argument(&r.tool) {
            Some(key) => place::place_key(&r.tool, key, call.input, call.cwd.unwrap_or(""), home)?,
            None => Cow::Borrowed(call.input),
        },
        ToolName::Mcp(_) => Cow::Borrowed(call.input),
    };
    let input = input.as_ref();
    // The fixed rule, before any policy rule. Only the writing tools and
    // the shell can reach a protected file.
    if let ToolName::Builtin(r) = call.name {
        if let Some(reach) = (call.builtins.reach)(&r.tool) {
            let protected = config.protected();
            if let Some(why) =
                protected_reach(&protected, &config.policy, reach, input, call.cwd, home)
            {
                let outcome = decided(
                    &r.server,
                    &r.tool,
                    &Decision::protected(),
                    input,
                    call.host_asks,
                );
                let reason = render::hook_protected(&outcome, &why);
                return Ok(Answer {
                    verdict: outcome.verdict,
                    reason,
                    outcome,
                });
            }
        }
    }
    let policy = super::checked::load_policy(config)?;

    let (taint, unknown) = if uses_taint(&policy) {
        match config.store().and_then(|s| s.read(call.session)) {
            Ok(t) => (t, None),
            Err(why) => (Vec::new(), Some(why)),
        }
    } else {
        (Vec::new(), None)
    };
    let taint_refs: Vec<&str> = taint.iter().map(String::as_str).collect();

    let readings = call.name.readings();
    let mut strictest = None;
    for reading in readings {
        let mut request = Request::tool(&reading.server, &reading.tool)
            .with_args(input)
            .with_taint(&taint_refs)
            // The hosts' tools act on this machine: path tests read
            // symbolic links (unless the policy sets `resolve_links off`).
            .with_links(Links::ThisMachine);
        if let Some(cwd) = call.cwd {
            request = request.with_cwd(cwd);
        }
        if unknown.is_some() {
            request = request.with_taint_unknown();
        }
        let decision = policy.decide(&request);
        let stricter = strictest
            .as_ref()
            .is_none_or(|(_, d): &(_, crate::Decision)| rank(decision.decision) > rank(d.decision));
        if stricter {
            strictest = Some((reading, decision));
        }
    }
    let Some((reading, decision)) = strictest else {
        return Err(format!("`{}` gave no request to decide", call.shown));
    };
    let (decision, uncounted) = budgeted(config, &policy, reading, call.session, decision);

    let outcome = decided(
        &reading.server,
        &reading.tool,
        &decision,
        input,
        call.host_asks,
    );
    let at = decision
        .rule_id
        .as_ref()
        .and(decision.rule_span)
        .map(|span| policy.source.line_col(span.start));
    // The reason names the policy's own verdict: an ask the host cannot
    // put to a person reads as the ask it is, then why it is blocked.
    let shown = decided(&reading.server, &reading.tool, &decision, input, true);
    let mut reason = render::hook_decided(
        &shown,
        &decision,
        &policy.name,
        &config.policy.display(),
        at,
    );
    if readings.len() > 1 {
        reason.push_str(&format!(
            "; `{}` reads {} ways ({}) and the strictest decision stands",
            call.shown,
            readings.len(),
            readings
                .iter()
                .map(|r| format!("{}/{}", r.server, r.tool))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(why) = unknown {
        reason.push_str(&format!(
            "; the session's taint is unknown, so `tainted` fails closed: {why}"
        ));
    }
    if uncounted {
        reason.push_str(
            "; a hook run as its own process keeps no budget counters, so a call a budget matches is denied: answer hooks from `mcppol serve` to count budgets",
        );
    }
    if decision.decision == Verdict::Ask && !call.host_asks {
        reason = render::hook_ask_blocked(&reason, call.host);
    }
    Ok(Answer {
        verdict: outcome.verdict,
        reason,
        outcome,
    })
}

/// The call's budgets (`limit`): an allow the host will act on takes from
/// them, an ask is only checked (the host settles it; the hook never hears
/// the answer). Without a store (a hook run as its own process) a call a
/// budget matches is denied, and the flag says why.
fn budgeted(
    config: &HookConfig,
    policy: &crate::Policy,
    reading: &crate::claude::names::Reading,
    session: &str,
    decision: crate::Decision,
) -> (crate::Decision, bool) {
    use crate::budget::{counts, now_seconds, Caller, Charges, Room};
    if !counts(&decision) {
        return (decision, false);
    }
    let caller = Caller {
        principal: None,
        session: Some(session),
    };
    let charges = Charges::of(
        policy,
        &reading.server,
        &reading.tool,
        caller,
        now_seconds(),
    );
    if charges.is_empty() {
        return (decision, false);
    }
    let room = match &config.budgets {
        None => Room::Unavailable,
        Some(store) if decision.decision == Verdict::Allow => {
            crate::budget::wait(store.take(&charges.charges))
        }
        Some(store) => crate::budget::wait(store.check(&charges.charges)),
    };
    let uncounted = config.budgets.is_none();
    match charges.refusal(room) {
        Some(refusal) => (refusal, uncounted),
        None => (decision, false),
    }
}

/// Why a built-in tool's call writes a protected file, if it does: a
/// `Write`, `Edit`, `MultiEdit` or `NotebookEdit` of a protected path
/// (placed, relative paths from `cwd`, links resolved), or a `Bash`
/// command line that names one. `policy` names the enforced policy in the
/// reason. `mcppol explain` shows the same fixed rule.
pub fn protected_write(
    protected: &Protected,
    policy: &Path,
    tool: &str,
    input: &Value,
    cwd: Option<&str>,
    home: Option<&str>,
) -> Option<String> {
    let reach = claude_reach(tool)?;
    protected_reach(protected, policy, reach, input, cwd, home)
}

/// Why a call that reaches files as `reach` says touches a protected file,
/// if it does (see [`protected_write`]).
pub fn protected_reach(
    protected: &Protected,
    policy: &Path,
    reach: Reach,
    input: &Value,
    cwd: Option<&str>,
    home: Option<&str>,
) -> Option<String> {
    match reach {
        Reach::Write(key) => {
            let path = input.get(key)?.as_str()?;
            let full = match cwd {
                _ if path.starts_with('/') => PathBuf::from(path),
                Some(cwd) if cwd.starts_with('/') => Path::new(cwd).join(path),
                _ => {
                    return Some(format!(
                        "`{key}` is the relative path `{}` and the working folder is not an absolute path, so mcppol cannot tell whether it names a protected file",
                        path.escape_debug()
                    ))
                }
            };
            protected.covers(&full).then(|| {
                format!(
                    "`{}` is, or resolves to, a file this hook enforces or keeps (its policy `{}`, the .mcppoltest and lock files beside it, or its state folder)",
                    path.escape_debug(),
                    policy.display()
                )
            })
        }
        Reach::Shell(key) => {
            let command = input.get(key)?.as_str()?;
            let word = protected
                .shell_words(home)
                .into_iter()
                .find(|w| command.contains(w.as_str()))?;
            Some(format!(
                "the command names `{}`, a file or folder this hook enforces or keeps (its policy `{}`, the .mcppoltest and lock files beside it, or its state folder)",
                word.escape_debug(),
                policy.display()
            ))
        }
    }
}
