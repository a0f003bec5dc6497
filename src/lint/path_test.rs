//! `reversed_path_test`: `inside` where a match narrows access (a deny or
//! ask rule) or `escapes` where it widens it (an allow rule). Each test is
//! built to fail closed on its own side: a path that cannot be read as one
//! (not a string, a NUL, a backslash) is never `inside` and always
//! `escapes`. On the other side that same path slips through.

use super::{each_rule_test, Ctx, REVERSED_PATH_TEST};
use crate::syntax::Cond;

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        each_rule_test(rule.ast, &mut |cond, widening| {
            if let Cond::Path {
                inside, span, root, ..
            } = cond
            {
                if *inside != widening {
                    found.push((*inside, *span, root.node.clone()));
                }
            }
        });
    }
    for (inside, span, root) in found {
        let root = root.escape_debug();
        let (message, label, help) = if inside {
            (
                "`inside` where a match denies or asks fails open: a path argument that cannot be read as a path (not a string, a NUL, a backslash) is never inside, so that call is not refused".to_string(),
                "fails open",
                format!("refuse what leaves the allowed area with `escapes`, e.g. `deny TARGET when args.path escapes \"{root}\"`, and allow with `inside`"),
            )
        } else {
            (
                "`escapes` where a match allows fails open: a path argument that cannot be read as a path (not a string, a NUL, a backslash) counts as escaping, so this rule allows it".to_string(),
                "fails open",
                format!("allow with `inside`, e.g. `allow TARGET when args.path inside \"{root}\"`, and refuse with `escapes` in a deny or ask rule"),
            )
        };
        let diagnostic = cx
            .warning(&REVERSED_PATH_TEST, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(&REVERSED_PATH_TEST, diagnostic);
    }
}
