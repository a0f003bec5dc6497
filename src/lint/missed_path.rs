//! `missed_path_argument` (with `--tools`): a deny or ask rule that tests a
//! path-like argument (`args.path`) on tools that do not have it but take
//! their paths under other names (`paths`, `source`, `destination`, ...).
//! For those tools the test finds nothing, so the rule never applies to
//! them: `deny "fs/*" when args.path matches /\.env/` lets
//! `read_multiple_files` read `.env` through `args.paths`.

use std::collections::BTreeSet;

use super::patterns::matches_tool;
use super::{each_rule_test, Ctx, MISSED_PATH_ARGUMENT};
use crate::syntax::{Cond, Effect, SelectorAst, Span, Step, TargetKind};

/// Whether an argument's name says it holds a path.
pub(crate) fn is_path_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "path"
            | "paths"
            | "source"
            | "sources"
            | "destination"
            | "src"
            | "dest"
            | "dst"
            | "target"
            | "root"
            | "cwd"
    ) || ["file", "dir", "folder"].iter().any(|p| n.starts_with(p))
        || [
            "path",
            "paths",
            "file",
            "files",
            "dir",
            "directory",
            "folder",
        ]
        .iter()
        .any(|s| n.ends_with(s))
}

fn selector_of(cond: &Cond) -> Option<&SelectorAst> {
    match cond {
        Cond::Exists { selector, .. }
        | Cond::Bare(selector)
        | Cond::Compare { selector, .. }
        | Cond::In { selector, .. }
        | Cond::Matches { selector, .. }
        | Cond::Path { selector, .. } => Some(selector),
        _ => None,
    }
}

/// The top-level argument an `args` selector starts with.
fn first_key(selector: &SelectorAst) -> Option<&str> {
    if selector.root.node != "args" {
        return None;
    }
    match &selector.steps.first()?.node {
        Step::Key(k) => Some(k),
        Step::Index(_) => None,
    }
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let Some(listing) = cx.tools else {
        return;
    };
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.kind != TargetKind::Tool || rule.ir.effect == Effect::Allow {
            continue;
        }
        // Every top-level argument the condition reads, and where the
        // path-like ones are first read.
        let mut read: BTreeSet<String> = BTreeSet::new();
        let mut path_reads: Vec<(String, Span)> = Vec::new();
        each_rule_test(rule.ast, &mut |cond, _| {
            let Some(key) = selector_of(cond).and_then(first_key) else {
                return;
            };
            if is_path_like(key) && !read.contains(key) {
                path_reads.push((key.to_string(), cond.span()));
            }
            read.insert(key.to_string());
        });
        if path_reads.is_empty() {
            continue;
        }
        for (key, span) in path_reads {
            // Tools the rule covers that lack `key` and take paths the rule
            // never reads.
            let mut missed: Vec<String> = Vec::new();
            for (server, tool) in listing.tools() {
                if !rule
                    .ir
                    .targets
                    .iter()
                    .any(|t| matches_tool(t, true, server, &tool.name))
                {
                    continue;
                }
                let Some(props) = tool
                    .input_schema
                    .as_ref()
                    .and_then(|s| s.get("properties"))
                    .and_then(|p| p.as_object())
                else {
                    continue;
                };
                if props.contains_key(&key) {
                    continue;
                }
                let unread: Vec<&str> = props
                    .keys()
                    .map(String::as_str)
                    .filter(|k| is_path_like(k) && !read.contains(*k))
                    .collect();
                if !unread.is_empty() {
                    let args = unread
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    missed.push(format!("{server}/{} (takes {args})", tool.name));
                }
            }
            if !missed.is_empty() {
                found.push((span, rule.ir.effect, key, missed));
            }
        }
    }
    for (span, effect, key, missed) in found {
        let count = missed.len();
        let diagnostic = cx
            .warning(
                &MISSED_PATH_ARGUMENT,
                span,
                format!(
                    "this {} rule reads `args.{key}`, which {} not have: {}; for {} the test finds nothing and the rule never applies",
                    effect.as_str(),
                    if count == 1 { "this tool does" } else { "these tools do" },
                    missed.join(", "),
                    if count == 1 { "it" } else { "them" },
                ),
            )
            .with_label(format!("only `{key}` is read"))
            .with_help(format!(
                "test the other path arguments too (`... or args.OTHER ...` with the same test), or write a rule for those tools; `args.{key}` alone misses their paths"
            ));
        cx.emit(&MISSED_PATH_ARGUMENT, diagnostic);
    }
}

#[cfg(test)]
mod tests {
    use super::is_path_like;

    #[test]
    fn path_like_names() {
        for n in [
            "path",
            "paths",
            "source",
            "destination",
            "file",
            "filePath",
            "file_path",
            "files",
            "dirName",
            "outputDir",
            "root",
        ] {
            assert!(is_path_like(n), "{n}");
        }
        for n in [
            "content", "pattern", "edits", "head", "query", "url", "sortBy",
        ] {
            assert!(!is_path_like(n), "{n}");
        }
    }
}
