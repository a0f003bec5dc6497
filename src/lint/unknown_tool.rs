//! `unknown_tool` (with `--tools`): a target whose server is listed but that
//! matches none of its tools: a misspelt tool, or one the server renamed or
//! dropped. Only targets with a literal server segment that is listed are
//! checked: of a server that is not listed nothing is known.

use super::patterns::matches_tool;
use super::{Ctx, UNKNOWN_TOOL};
use crate::diagnostics::did_you_mean;
use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::NameMatcher;
use crate::syntax::{Effect, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let Some(listing) = cx.tools else {
        return;
    };
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.kind != TargetKind::Tool {
            continue;
        }
        let loose = rule.ir.effect != Effect::Allow;
        for target in &rule.ir.targets {
            let Glob::Literal(server) = &target.matcher.server else {
                continue;
            };
            let Some(id) = listing.server_ids().find(|id| {
                if loose {
                    fold(id) == **server
                } else {
                    *id == &**server
                }
            }) else {
                continue;
            };
            let tools = listing.server(id).unwrap_or_default();
            if tools
                .iter()
                .any(|t| matches_tool(target, loose, id, &t.name))
            {
                continue;
            }
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let help = match &target.matcher.name {
                NameMatcher::Glob(Glob::Literal(n)) => did_you_mean(n, names.iter().copied())
                    .map(|k| format!("did you mean `\"{id}/{k}\"`?")),
                _ => None,
            }
            .unwrap_or_else(|| {
                let shown: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
                let more = names.len().saturating_sub(8);
                format!(
                    "`{id}` lists {}{}",
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                )
            });
            found.push((
                target.span,
                cx.text(target.span).to_string(),
                id.to_string(),
                help,
            ));
        }
    }
    for (span, text, id, help) in found {
        let diagnostic = cx
            .warning(
                &UNKNOWN_TOOL,
                span,
                format!("{text} matches no tool that server `{id}` lists"),
            )
            .with_label("no such tool")
            .with_help(help);
        cx.emit(&UNKNOWN_TOOL, diagnostic);
    }
}
