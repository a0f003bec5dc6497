//! `trust_all_annotations`: `trusted all` in a policy whose rules decide on
//! annotations. Annotations are what a server says about its own tools;
//! for a server that is not trusted every hint takes its conservative value.
//! Believing every server means any server, a new or a compromised one too,
//! can mark a tool read-only to be allowed, or not destructive to escape a
//! deny on destructive tools: whatever the rule's effect or polarity, its
//! outcome is the server's to choose.

use super::{each_rule_test, Ctx, TRUST_ALL_ANNOTATIONS};
use crate::policy::Trusted;
use crate::syntax::{Cond, Item, SelectorAst};

pub(super) fn check(cx: &mut Ctx<'_>) {
    if cx.policy.settings.trusted != Trusted::All {
        return;
    }
    let Some(setting) = cx.ast.items.iter().rev().find_map(|item| match item {
        Item::Setting(s) if s.name.node == "trusted" => Some(s),
        _ => None,
    }) else {
        return;
    };
    let mut allows = Vec::new();
    for rule in &cx.rules {
        let mut reads = false;
        each_rule_test(rule.ast, &mut |cond, _| {
            let selector: Option<&SelectorAst> = match cond {
                Cond::Bare(s) => Some(s),
                Cond::Compare { selector, .. } | Cond::In { selector, .. } => Some(selector),
                _ => None,
            };
            if selector.is_some_and(|s| s.root.node == "annotation") {
                reads = true;
            }
        });
        if reads {
            allows.push(format!(
                "`{}` (line {})",
                rule.ir.id,
                cx.line(rule.ir.span.start)
            ));
        }
    }
    if allows.is_empty() {
        return;
    }
    let span = setting
        .values
        .iter()
        .find(|v| v.node.text() == "all")
        .map_or(setting.span, |v| v.span);
    let diagnostic = cx
        .warning(
            &TRUST_ALL_ANNOTATIONS,
            span,
            format!(
                "`trusted all` believes every server's annotations, and {} decide{} on them: {}",
                if allows.len() == 1 { "a rule".to_string() } else { format!("{} rules", allows.len()) },
                if allows.len() == 1 { "s" } else { "" },
                allows.join(", ")
            ),
        )
        .with_label("every server is trusted")
        .with_help("any server, a new or compromised one too, can then mark its tools read-only or not destructive to be allowed, or to escape a rule that refuses destructive tools; name the servers whose hints you trust: `trusted \"fs\", \"github\"`");
    cx.emit(&TRUST_ALL_ANNOTATIONS, diagnostic);
}
