//! `matches_nothing`: a target pattern that no name can match: an empty
//! pattern, an empty server or name segment (`"/x"`, `"x/"`), or for tools
//! and prompts a `//`. Rules and the `tools {}` block are both checked. A
//! deny that matches nothing is the dangerous case: it reads as protection
//! and protects nothing.

use super::{Ctx, MATCHES_NOTHING};
use crate::syntax::{Item, TargetAst, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for item in &cx.ast.items {
        match item {
            Item::Rule(rule) => {
                for target in &rule.targets {
                    if let Some(why) = why_nothing(target, rule.kind) {
                        found.push((target.span(), why));
                    }
                }
            }
            Item::Limit(limit) => {
                for target in &limit.targets {
                    if let Some(why) = why_nothing(target, TargetKind::Tool) {
                        found.push((target.span(), why));
                    }
                }
            }
            Item::Tools(block) => {
                for entry in &block.entries {
                    for target in &entry.targets {
                        if let Some(why) = why_nothing(target, TargetKind::Tool) {
                            found.push((target.span(), why));
                        }
                    }
                }
            }
            Item::Setting(_) | Item::Let(_) => {}
        }
    }
    for (span, why) in found {
        let diagnostic = cx
            .warning(
                &MATCHES_NOTHING,
                span,
                format!("this pattern matches nothing: {why}"),
            )
            .with_label("matches nothing")
            .with_help(
                "write `\"server/tool\"` with both segments, `\"tool\"` for that tool on any server, or `*` for everything",
            );
        cx.emit(&MATCHES_NOTHING, diagnostic);
    }
}

fn why_nothing(target: &TargetAst, kind: TargetKind) -> Option<&'static str> {
    match target {
        TargetAst::Any(_) => None,
        TargetAst::Regex { server, .. } => server
            .node
            .is_empty()
            .then_some("its server segment is empty, and no server has an empty id"),
        TargetAst::Pattern(p) => {
            let text = p.node.as_str();
            if text.is_empty() {
                return Some("it is empty");
            }
            let (server, name) = text.split_once('/')?;
            if server.is_empty() {
                Some("its server segment (before the first `/`) is empty")
            } else if name.is_empty() {
                Some("its name segment (after the first `/`) is empty")
            } else if kind != TargetKind::Resource && name.starts_with('/') {
                Some("`//` leaves an empty segment: tool and prompt names never start with `/`")
            } else {
                None
            }
        }
    }
}
