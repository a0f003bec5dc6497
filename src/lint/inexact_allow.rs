//! `inexact_allow`: with `allow_new_tools off` (the default), only an exact
//! target (`"fs/read_file"`: both segments literal) allows a tool that has
//! no approved fingerprint. A glob, a bare tool name, `*` or a regex in an
//! allow rule still allows approved tools, but a tool the server adds later
//! falls to the default. One warning a rule; its help names the exact rule
//! that would allow the tools (from `--tools` when given).

use super::patterns::{glob_text, matches_tool};
use super::shadowed::head_span;
use super::{Ctx, INEXACT_ALLOW};
use crate::policy::glob::Glob;
use crate::policy::{DefaultDecision, NameMatcher, Target};
use crate::syntax::{Effect, Span, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    if cx.policy.settings.allow_new_tools {
        return;
    }
    let default = match cx.policy.settings.default {
        DefaultDecision::Ask => "ask",
        DefaultDecision::Deny => "deny",
    };
    let mut found = Vec::new();
    for rule in &cx.rules {
        if rule.ir.effect != Effect::Allow || rule.ir.kind != TargetKind::Tool {
            continue;
        }
        let inexact: Vec<&Target> = rule.ir.targets.iter().filter(|t| !t.exact).collect();
        let (Some(first), Some(last)) = (inexact.first(), inexact.last()) else {
            continue;
        };
        let span = if inexact.len() == rule.ir.targets.len() {
            head_span(rule)
        } else {
            Span::new(first.span.start, last.span.end)
        };
        let written: Vec<&str> = inexact.iter().map(|t| cx.text(t.span)).collect();
        let exact = exact_rule(cx, &inexact);
        let when = if rule.ast.condition.is_some() {
            " when ..."
        } else {
            ""
        };
        let help = match exact {
            Some(list) => format!(
                "to allow new tools too, name them: `allow {list}{when}`; if only approved tools should match, keep the rule and silence this with `# mcppol: allow(inexact_allow)` and the reason"
            ),
            None => format!(
                "to allow new tools too, name each one: `allow {}{when}`; if only approved tools should match, keep the rule and silence this with `# mcppol: allow(inexact_allow)` and the reason",
                inexact.iter().map(|t| example(t)).collect::<Vec<_>>().join(", ")
            ),
        };
        let message = format!(
            "{} never {} a tool first seen after approval: `allow_new_tools` is off, so such a tool falls to the default ({default})",
            written.join(", "),
            if written.len() == 1 { "allows" } else { "allow" },
        );
        found.push((span, message, help));
    }
    for (span, message, help) in found {
        let diagnostic = cx
            .warning(&INEXACT_ALLOW, span, message)
            .with_label("not an exact target")
            .with_help(help);
        cx.emit(&INEXACT_ALLOW, diagnostic);
    }
}

/// The exact targets naming the listed tools the inexact targets match.
fn exact_rule(cx: &Ctx<'_>, inexact: &[&Target]) -> Option<String> {
    let tools = cx.tools?;
    let mut names = Vec::new();
    for (server, tool) in tools.tools() {
        if inexact
            .iter()
            .any(|t| matches_tool(t, false, server, &tool.name))
        {
            names.push(format!("\"{server}/{}\"", tool.name));
        }
    }
    (!names.is_empty()).then(|| names.join(", "))
}

/// An exact target in the shape of `target`, with placeholders.
fn example(target: &Target) -> String {
    let server = match &target.matcher.server {
        Glob::Literal(s) => s.to_string(),
        _ => "SERVER".to_string(),
    };
    let name = match &target.matcher.name {
        NameMatcher::Glob(Glob::Literal(n)) => n.to_string(),
        other => placeholder(other),
    };
    format!("\"{server}/{name}\"")
}

/// `get_*` becomes `get_NAME`, `*_repo` becomes `NAME_repo`.
fn placeholder(name: &NameMatcher) -> String {
    match name {
        NameMatcher::Glob(g) => {
            let mut out = String::new();
            let mut last_wild = false;
            for c in glob_text(g).chars() {
                if c == '*' || c == '?' {
                    if !last_wild {
                        out.push_str("NAME");
                    }
                    last_wild = true;
                } else {
                    out.push(c);
                    last_wild = false;
                }
            }
            out
        }
        NameMatcher::Regex(_) => "NAME".to_string(),
    }
}
