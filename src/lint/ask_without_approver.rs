//! `ask_without_approver`: an `ask` rule on resource reads or prompt gets.
//! Those requests never have an approver (only a tool call can be put to a
//! person), so such a rule always decides `deny` with `reason:
//! no_approver`: it reads as "a person decides" and refuses every time.

use super::shadowed::head_span;
use super::{Ctx, ASK_WITHOUT_APPROVER};
use crate::syntax::{Effect, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.effect != Effect::Ask || rule.ir.kind == TargetKind::Tool {
            continue;
        }
        let (kind, what) = match rule.ir.kind {
            TargetKind::Resource => ("resource", "resource reads"),
            _ => ("prompt", "prompt gets"),
        };
        let targets: Vec<&str> = rule.ir.targets.iter().map(|t| cx.text(t.span)).collect();
        let message = format!(
            "`ask {kind}` always denies: {what} never have an approver, so nothing is asked and every match is denied (`reason: no_approver`)"
        );
        let help = format!(
            "write what it does, `deny {kind} {}`; to let some {what} through, allow them: `allow {kind} ... when ...`",
            targets.join(", ")
        );
        found.push((head_span(rule), message, help));
    }
    for (span, message, help) in found {
        let diagnostic = cx
            .warning(&ASK_WITHOUT_APPROVER, span, message)
            .with_label("always a deny")
            .with_help(help);
        cx.emit(&ASK_WITHOUT_APPROVER, diagnostic);
    }
}
