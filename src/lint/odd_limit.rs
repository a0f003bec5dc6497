//! `odd_limit`: a budget whose count makes it something other than a
//! budget: `0` denies every call it matches (which a deny rule says
//! plainly, with `source: deny`), and more than a thousand calls a second
//! never binds a call an agent makes.

use super::{Ctx, ODD_LIMIT};
use crate::syntax::Item;

/// More calls a second than this, averaged over the window, is no budget.
const MOST_PER_SECOND: u64 = 1000;

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for item in &cx.ast.items {
        let Item::Limit(ast) = item else { continue };
        let Some(limit) = cx.policy.limits().iter().find(|l| l.span == ast.span) else {
            continue;
        };
        if limit.count == 0 {
            found.push((
                ast.count.span,
                "a budget of 0 denies every call it matches".to_string(),
                "always denies",
                "write a deny rule for these targets: it says what it does, and decides as `source: deny`".to_string(),
            ));
        } else if limit.count / limit.window.max(1) > MOST_PER_SECOND {
            found.push((
                ast.count.span,
                format!(
                    "{} calls a {} is more than {MOST_PER_SECOND} a second: this budget never binds",
                    limit.count, limit.unit
                ),
                "never binds",
                format!(
                    "count calls per a longer window (`{} per {}` is likely meant), or remove the `limit`",
                    limit.count,
                    next_unit(limit.unit)
                ),
            ));
        }
    }
    for (span, message, label, help) in found {
        let diagnostic = cx
            .warning(&ODD_LIMIT, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(&ODD_LIMIT, diagnostic);
    }
}

/// The window after `unit`.
fn next_unit(unit: &str) -> &'static str {
    match unit {
        "second" => "minute",
        "minute" => "hour",
        _ => "day",
    }
}
