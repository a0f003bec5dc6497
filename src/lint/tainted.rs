//! `tainted_widens`: `tainted` where a match widens access: in an allow
//! rule, or under `not` (or `unless`) in a deny or ask rule. Taint is the
//! sign of a prompt injection; a rule that allows more, or refuses less,
//! once foreign output is in the model's context points the wrong way.

use super::{each_rule_test, Ctx, TAINTED_WIDENS};
use crate::syntax::{Cond, Effect};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        each_rule_test(rule.ast, &mut |cond, widening| {
            if let (Cond::Tainted { span, .. }, true) = (cond, widening) {
                found.push((rule.ir.effect, *span));
            }
        });
    }
    for (effect, span) in found {
        let (message, help) = if effect == Effect::Allow {
            (
                "`tainted` in an allow rule only widens access: this rule allows more once another server's output is in the model's context",
                "to refuse calls made under foreign influence, deny or ask: `deny TARGET when tainted`; to allow only clean calls, write `when not tainted`",
            )
        } else {
            (
                "`not tainted` in a deny or ask rule refuses only clean calls: once another server's output is in context, this rule stops applying",
                "write `when tainted` to refuse calls made under foreign influence",
            )
        };
        let diagnostic = cx
            .warning(&TAINTED_WIDENS, span, message)
            .with_label("widens access when tainted")
            .with_help(help);
        cx.emit(&TAINTED_WIDENS, diagnostic);
    }
}
