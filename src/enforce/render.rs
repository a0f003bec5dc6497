//! The one renderer: an outcome (or a bare policy decision) to the words
//! people and models read. The proxy's answers, the approver's dialog, the
//! Claude hook's reasons, `table`'s cells, `eval`'s lines and a
//! [`CallError`](crate::pipeline::CallError)'s text are all written here
//! and nowhere else, so a front door maps an outcome and never words a
//! decision of its own.

#[cfg(feature = "cli")]
use std::fmt::Display;

#[cfg(all(feature = "cli", feature = "pipeline"))]
use serde_json::{json, Value};

#[cfg(feature = "cli")]
use super::Outcome;
use crate::Decision;

/// The reasons whose detail (what the hook or the person said, or why the
/// arguments do not fit) a model is shown after the refusal.
#[cfg(feature = "cli")]
const SAID: [&str; 4] = ["hook_denied", "ask_denied", "ask_halt", "invalid_arguments"];

/// The text a model reads for a tool call that did not go through: the
/// decision, the reason word and the rule, so it stops retrying and a
/// person can find the rule. `detail` is what the hook, the approver or
/// the schema check said.
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub(crate) fn outcome_refusal_text(o: &Outcome, detail: Option<&str>) -> String {
    refusal_words(&Refusal {
        verdict: o.verdict.as_str(),
        reason: o.reason,
        decision: o.decision.as_ref(),
        hook: o.hook_id.as_deref(),
        detail: detail.filter(|_| SAID.contains(&o.reason)),
        halt: o.is_halt(),
    })
}

/// The refusal text of a bare policy decision, for a host that holds a
/// [`Decision`] and no outcome (the Python and Node packages): the words
/// `mcppol proxy` gives a model. `reason` is the request's own reason when
/// it is not the policy's (`ask_denied`: a person said no; `ask_failed`;
/// `ask_halt`), and the verdict is then `deny`.
///
/// ```
/// let set = mcppol::PolicySet::from_text("p.mcppol",
///     "policy p {\n  default deny\n  deny rm: \"fs/delete\"\n}\n")
///     .map_err(|e| e.render(false))?;
/// let d = set.get("p").ok_or("no policy")?.decide(&mcppol::Request::tool("fs", "delete"));
/// assert_eq!(
///     mcppol::refusal_text(&d, None),
///     "mcppol refused this call: decision deny, reason deny_rule, rule rm, policy p. \
///      Do not retry the same call; a person can change the policy."
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn refusal_text(decision: &Decision, reason: Option<&str>) -> String {
    refusal_words(&Refusal {
        verdict: if reason.is_some() {
            "deny"
        } else {
            decision.decision.as_str()
        },
        reason: reason.unwrap_or(decision.reason.as_str()),
        decision: Some(decision),
        hook: None,
        detail: None,
        halt: reason == Some("ask_halt"),
    })
}

/// What a refusal's words are made of.
struct Refusal<'a> {
    verdict: &'a str,
    reason: &'a str,
    decision: Option<&'a Decision>,
    hook: Option<&'a str>,
    /// What a hook, a person or the schema check said (shown after).
    detail: Option<&'a str>,
    halt: bool,
}

fn refusal_words(r: &Refusal<'_>) -> String {
    let mut text = String::from("mcppol refused this call: ");
    match r.decision {
        Some(d) => text.push_str(&format!(
            "decision {}, reason {}, rule {}",
            r.verdict,
            r.reason,
            d.rule_id.as_deref().unwrap_or("none"),
        )),
        None => text.push_str(&format!("decision deny, reason {}", r.reason)),
    }
    if let Some(d) = r.decision {
        if r.reason != d.reason.as_str() {
            text.push_str(&format!(" (policy reason {})", d.reason.as_str()));
        }
        if let Some(p) = &d.policy {
            text.push_str(&format!(", policy {p}"));
        }
    }
    if let Some(hook) = r.hook {
        text.push_str(&format!(", hook {hook}"));
    }
    text.push('.');
    if let Some(detail) = r.detail {
        text.push_str(&format!(" {detail}"));
    }
    if r.halt {
        text.push_str(" Stop: the person asked to halt.");
    } else {
        text.push_str(" Do not retry the same call; a person can change the policy.");
    }
    text
}

/// The message of a call to a tool the host may not see or the server
/// never listed: the same for both but for the name.
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub(crate) fn unknown_tool(name: &str) -> String {
    format!("Unknown tool: {name}")
}

/// The message and the data of a refused resource read or prompt get
/// (`what` says which).
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub(crate) fn read_refusal(what: &str, o: &Outcome) -> (String, Value) {
    let d = o.decision.as_ref();
    (
        format!("mcppol refused this {what}: reason {}", o.reason),
        json!({
            "decision": "deny",
            "reason": o.reason,
            "rule_id": d.and_then(|d| d.rule_id.as_deref()),
            "policy": d.and_then(|d| d.policy.as_deref()),
            "hook_id": o.hook_id,
        }),
    )
}

/// The dialog a person reads before an asked call runs (the host's
/// elicitation, an approver command's `message`): every name escaped,
/// every value of the arguments listed and cut on its own, with the cuts
/// said.
#[cfg(all(feature = "cli", feature = "pipeline"))]
pub(crate) fn ask_message(server: &str, tool: &str, d: &Decision, arguments: &Value) -> String {
    use crate::escape::{escape, show_arguments};
    format!(
        "mcppol asks before server `{}` runs tool `{}` (rule {}, reason {}).\n{}",
        escape(server),
        escape(tool),
        escape(d.rule_id.as_deref().unwrap_or("none")),
        d.reason.as_str(),
        show_arguments(arguments)
    )
}

/// What decided, for the Claude hook's reason: the rule (with where it is
/// written, when known), the default or the stage, and the policy.
#[cfg(feature = "cli")]
fn decided_by(
    d: &Decision,
    policy: &str,
    file: &dyn Display,
    at: Option<(usize, usize)>,
) -> String {
    let reason = d.reason.as_str();
    match (&d.rule_id, at) {
        (Some(id), Some((line, column))) => {
            format!("rule `{id}` ({reason}) of policy `{policy}` at {file}:{line}:{column}")
        }
        (Some(id), None) => format!("rule `{id}` ({reason}) of policy `{policy}` in {file}"),
        (None, _) if d.source == crate::Source::Default => {
            format!("the default ({reason}) of policy `{policy}` in {file}")
        }
        (None, _) => format!(
            "{} ({reason}) of policy `{policy}` in {file}",
            d.source.as_str()
        ),
    }
}

/// The Claude hook's `permissionDecisionReason` for `o`, which the
/// policy's decision `d` decided: the verdict, the call and what decided.
/// `at` is the deciding rule's line and column in `file`.
#[cfg(feature = "cli")]
pub(crate) fn hook_decided(
    o: &Outcome,
    d: &Decision,
    policy: &str,
    file: &dyn Display,
    at: Option<(usize, usize)>,
) -> String {
    format!(
        "mcppol: {} {}/{} by {}",
        o.verdict.as_str(),
        o.server,
        o.name.as_deref().unwrap_or(""),
        decided_by(d, policy, file, at)
    )
}

/// The Claude hook's reason for a write the fixed rule refuses.
#[cfg(feature = "cli")]
pub(crate) fn hook_protected(o: &Outcome, why: &str) -> String {
    format!(
        "mcppol: {} {}/{} by the fixed rule `protected` ({}): {why}; no policy rule can allow it",
        o.verdict.as_str(),
        o.server,
        o.name.as_deref().unwrap_or(""),
        o.reason
    )
}

/// The Claude hook's reason for a call it could not decide.
#[cfg(feature = "cli")]
pub(crate) fn hook_failed(why: &str) -> String {
    format!("mcppol could not decide this call, so it is denied: {why}")
}

/// A hook's reason for an `ask` its host's hooks cannot put to a person:
/// the call is blocked, and the reason says how a person lets it run.
#[cfg(feature = "cli")]
pub(crate) fn hook_ask_blocked(reason: &str, host: &str) -> String {
    format!(
        "{reason}; the policy asks a person about this call and {host}'s hooks cannot ask, so it is blocked: to let it run, change the rule to `allow` (or add an `allow` rule for this call) and try again"
    )
}

/// The Claude hook's reason for a call whose audit line could not be
/// written to `file`.
#[cfg(feature = "cli")]
pub(crate) fn hook_audit_failed(file: &dyn Display, error: &dyn Display) -> String {
    format!(
        "mcppol: deny (audit_failed): the audit line could not be written to `{file}`, and a call that is not audited is not run: {error}"
    )
}

/// One cell of `mcppol table`: the verdict and the deciding rule (or, with
/// none, the stage in parentheses).
#[cfg(feature = "cli")]
pub(crate) fn decision_cell(d: &Decision) -> String {
    let by = match &d.rule_id {
        Some(id) => id.to_string(),
        None => format!("({})", d.source.as_str()),
    };
    format!("{:<5} {by}", d.decision.as_str())
}

/// The head of a `table` row whose decision a listing cannot settle:
/// what it depends on (`args.path`, `taint`, `principal`, ...).
#[cfg(feature = "cli")]
pub(crate) fn depends_cell(inputs: &[String]) -> String {
    format!("depends on {}", inputs.join(", "))
}

/// The label of one outcome under a `table` row that depends: `when` the
/// rule whose condition is the first to hold, or `otherwise`.
#[cfg(feature = "cli")]
pub(crate) fn outcome_label(rule_id: Option<&str>) -> String {
    match rule_id {
        Some(id) => format!("  when {id}"),
        None => "  otherwise".to_string(),
    }
}

/// The summary under a `table`: the policy, how many tools, how many of
/// them depend on what a call says.
#[cfg(feature = "cli")]
pub(crate) fn table_summary(
    policy: &str,
    file: &dyn Display,
    tools: usize,
    depend: usize,
) -> String {
    format!("policy `{policy}` ({file}): {tools} tool(s), {depend} depending on what the call says; a tool on one line is decided the same whatever its arguments, taint and principal.")
}

/// The note under a `table` that has a row that depends.
#[cfg(feature = "cli")]
pub(crate) const DEPENDS_NOTE: &str = "depends on: rules whose conditions read these decide a real call; under it, the decision `when` each is the first to hold, `otherwise` when none does.";

/// The JSON object `mcppol eval` prints for a decision, and `table --format
/// json` for each cell.
#[cfg(feature = "cli")]
pub(crate) fn decision_json(d: &Decision) -> serde_json::Value {
    d.to_json()
}

/// A [`CallError`](crate::pipeline::CallError)'s text: `kind: reason`, how
/// a hook or the approver failed, the hook, the rule, then the detail.
#[cfg(feature = "pipeline")]
pub(crate) fn call_error(
    e: &crate::pipeline::CallError,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    use crate::pipeline::ErrorReason;
    write!(f, "{}: {}", e.kind.as_str(), e.reason.as_str())?;
    match e.reason {
        ErrorReason::HookFailed(h) => write!(f, " ({})", h.as_str())?,
        ErrorReason::AskFailed(a) => write!(f, " ({})", a.as_str())?,
        _ => {}
    }
    if let Some(id) = &e.hook_id {
        write!(f, " [hook {id}]")?;
    }
    if let Some(rule) = e.decision.as_ref().and_then(|d| d.rule_id.as_deref()) {
        write!(f, " [rule {rule}]")?;
    }
    if let Some(d) = &e.detail {
        write!(f, ": {d}")?;
    }
    Ok(())
}
