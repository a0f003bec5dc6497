//! `unused_let`: a `let` whose name nothing uses. Either the value was
//! meant to be used somewhere (a rule written with the value by hand, or a
//! misspelt name the compiler did not catch because it stands where a word
//! goes) or the name is left over.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Ctx, UNUSED_LET};
use crate::diagnostics::{Diagnostic, SourceFile};
use crate::syntax::{self, Item, LetAst};

/// The names the file uses: where a name stands for a value, and the
/// values of settings (`roots NAME`, `trusted NAME`).
pub(super) fn used_names<'t>(file: &syntax::File, text: &'t str) -> HashSet<&'t str> {
    let at = |s: syntax::Span| text.get(s.start..s.end).unwrap_or_default().trim();
    let mut used: HashSet<&'t str> = file.name_uses.iter().map(|s| at(*s)).collect();
    for policy in &file.policies {
        for item in &policy.items {
            if let Item::Setting(setting) = item {
                used.extend(setting.values.iter().map(|v| at(v.span)));
            }
        }
    }
    used
}

/// The warning for one unused `let`.
fn warning(source: &Arc<SourceFile>, l: &LetAst) -> Diagnostic {
    Diagnostic::warning(
        source,
        UNUSED_LET.code,
        l.name.span,
        format!("`{}` is never used", l.name.node),
    )
    .with_label("unused name")
    .with_help(format!(
        "use it where its value goes (`inside {0}`, `in {0}`, a target), or remove the `let`",
        l.name.node
    ))
}

/// A policy's own unused names.
pub(super) fn check(cx: &mut Ctx<'_>, used: &HashSet<&str>) {
    let unused: Vec<&LetAst> = cx
        .ast
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Let(l) if !used.contains(l.name.node.as_str()) => Some(l),
            _ => None,
        })
        .collect();
    for l in unused {
        let diagnostic = warning(cx.source, l);
        cx.emit(&UNUSED_LET, diagnostic);
    }
}

/// The file's own unused names (outside every policy: a `# mcppol:
/// allow(...)` comment cannot silence them; remove the name).
pub(super) fn check_file(
    file: &syntax::File,
    source: &Arc<SourceFile>,
    used: &HashSet<&str>,
) -> Vec<Diagnostic> {
    file.lets
        .iter()
        .filter(|l| !used.contains(l.name.node.as_str()))
        .map(|l| warning(source, l))
        .collect()
}
