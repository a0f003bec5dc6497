//! `unmatched_tools_entry` (with `--tools`): a pattern of the `tools {}`
//! block that no tool of its listed server meets: an `exclude` that hides
//! nothing, an `include` that shows nothing. A misspelt name, or a tool the
//! server renamed or dropped, leaves the tool the entry meant to hide in
//! view. As `unknown_tool` does, only patterns whose server segment is a
//! literal naming a listed server are checked.

use std::collections::BTreeSet;

use super::{Ctx, UNMATCHED_TOOLS_ENTRY};
use crate::diagnostics::did_you_mean;
use crate::policy::names::fold;
use crate::syntax::{Item, Span, TargetAst};

/// The server segment of a pattern as written, when it is a literal (no
/// `*` or `?`); `None` for a bare tool name or `*`, which mean every server.
fn literal_server(target: &TargetAst) -> Option<(&str, Option<&str>)> {
    let (server, name) = match target {
        TargetAst::Any(_) => return None,
        TargetAst::Pattern(p) => {
            let (server, name) = p.node.split_once('/')?;
            (server, Some(name))
        }
        TargetAst::Regex { server, .. } => (server.node.as_str(), None),
    };
    (!server.contains(['*', '?'])).then_some((server, name))
}

pub(super) fn check(cx: &mut Ctx<'_>) {
    let (Some(listing), Some(visibility)) = (cx.tools, cx.policy.visibility.as_ref()) else {
        return;
    };
    // Which patterns (positions in `visibility.patterns`) decided some
    // listed tool: every exclude that matched it, or, when none did, every
    // include that named it.
    let mut met: BTreeSet<u32> = BTreeSet::new();
    for (server, tool) in listing.tools() {
        let mut bufs = [[0; 64]; 2];
        let names = crate::policy::names::Names::new(server, &tool.name, &mut bufs);
        let mut hits = Default::default();
        cx.policy.visibility_folded(&names.query(), &mut hits);
        met.extend(hits.iter().copied());
    }
    let mut found: Vec<(Span, bool, String, String)> = Vec::new();
    for item in &cx.ast.items {
        let Item::Tools(block) = item else { continue };
        for entry in &block.entries {
            for target in &entry.targets {
                let span = target.span();
                let Some(at) = visibility.patterns.iter().position(|p| p.span == span) else {
                    continue;
                };
                if u32::try_from(at).is_ok_and(|at| met.contains(&at)) {
                    continue;
                }
                let Some((server, name)) = literal_server(target) else {
                    continue;
                };
                // An exclude matches loosely (case and punctuation folded),
                // an include exactly.
                let Some(id) = listing.server_ids().find(|id| {
                    if entry.include {
                        *id == server
                    } else {
                        fold(id) == fold(server)
                    }
                }) else {
                    continue;
                };
                let tools: Vec<&str> = listing
                    .server(id)
                    .unwrap_or_default()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect();
                let help = name
                    .filter(|n| !n.contains(['*', '?']))
                    .and_then(|n| did_you_mean(n, tools.iter().copied()))
                    .map_or_else(
                        || {
                            format!(
                                "`{id}` lists {} tool(s); check the name against them",
                                tools.len()
                            )
                        },
                        |k| format!("did you mean `\"{id}/{k}\"`?"),
                    );
                found.push((span, entry.include, id.to_string(), help));
            }
        }
    }
    for (span, include, id, help) in found {
        let text = cx.text(span).trim_end().to_string();
        let (message, label) = if include {
            (
                format!("`include {text}` shows no tool that server `{id}` lists"),
                "shows nothing",
            )
        } else {
            (
                format!("`exclude {text}` hides no tool that server `{id}` lists"),
                "hides nothing",
            )
        };
        let diagnostic = cx
            .warning(&UNMATCHED_TOOLS_ENTRY, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(&UNMATCHED_TOOLS_ENTRY, diagnostic);
    }
}
