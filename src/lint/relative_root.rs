//! `relative_root`: an `inside` or `escapes` root that is not an absolute
//! path. The engine takes a relative root from `/` (`"sandbox"` is
//! `/sandbox`), not from the host's working directory, and never expands
//! `~`: the root is almost certainly not the folder the author meant.
//! `$CWD` and `$CWD/...` name the request's working folder and are not
//! relative.

use super::{each_rule_test, Ctx, RELATIVE_ROOT};
use crate::paths::canonical_root;
use crate::policy::PathRoot;
use crate::syntax::Cond;

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for rule in &cx.rules {
        each_rule_test(rule.ast, &mut |cond, _| {
            if let Cond::Path { root, .. } | Cond::Writes { root, .. } = cond {
                let cwd = PathRoot::from_written(&root.node).is_ok_and(|r| r.is_cwd());
                if !root.node.starts_with('/') && !cwd {
                    found.push((root.span, root.node.clone()));
                }
            }
        });
    }
    for (span, root) in found {
        let read_as = canonical_root(&root).unwrap_or_else(|_| root.clone());
        let tilde = if root.starts_with('~') {
            " (`~` is not expanded)"
        } else {
            ""
        };
        let diagnostic = cx
            .warning(
                &RELATIVE_ROOT,
                span,
                format!(
                    "root `{}` is not absolute: it is read as `{read_as}`{tilde}",
                    root.escape_debug()
                ),
            )
            .with_label("relative root")
            .with_help("write the absolute path of the folder, e.g. \"/srv/sandbox\": a relative root is taken from `/`, not from where the host runs");
        cx.emit(&RELATIVE_ROOT, diagnostic);
    }
}
