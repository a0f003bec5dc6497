//! `shadowed_allow`, `shadowed_ask`: a rule that can never decide, because
//! an unconditional rule of a stronger effect matches everything it does.
//!
//! Precedence is `deny > pin > ask > allow` whatever the order, and deny and
//! ask rules match loosely, so `deny "*/delete_repo"` also covers
//! `allow "github/Delete-Repo"`. A deny with a condition does not shadow:
//! when its condition is false the weaker rule still decides. The weaker
//! rule's own condition does not matter: it only narrows it further.

use super::patterns::{target_covers, target_key};
use super::{Ctx, RuleView, SHADOWED_ALLOW, SHADOWED_ASK};
use crate::policy::names::fold;
use crate::policy::Target;
use crate::syntax::{Effect, Span};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for (i, rule) in cx.rules.iter().enumerate() {
        let (lint, stronger): (_, &[Effect]) = match rule.ir.effect {
            Effect::Allow => (&SHADOWED_ALLOW, &[Effect::Deny, Effect::Ask]),
            Effect::Ask => (&SHADOWED_ASK, &[Effect::Deny]),
            Effect::Deny => continue,
        };
        let loose = rule.ir.effect != Effect::Allow;
        let covers: Vec<Option<(usize, &Target)>> = rule
            .ir
            .targets
            .iter()
            .map(|inner| {
                cx.rules.iter().enumerate().find_map(|(j, outer)| {
                    let usable = j != i
                        && stronger.contains(&outer.ir.effect)
                        && outer.ir.kind == rule.ir.kind
                        && outer.ir.condition.is_none();
                    if !usable {
                        return None;
                    }
                    outer
                        .ir
                        .targets
                        .iter()
                        .find(|o| target_covers(o, inner, loose))
                        .map(|o| (j, o))
                })
            })
            .collect();
        if covers.iter().all(Option::is_some) && !covers.is_empty() {
            found.push((lint, i, None, covers));
        } else {
            for (t, cover) in covers.iter().enumerate() {
                if cover.is_some() {
                    found.push((lint, i, Some(t), vec![*cover]));
                }
            }
        }
    }
    for (lint, i, target, covers) in found {
        let rule = &cx.rules[i];
        let by: Vec<(usize, &Target)> = covers.iter().flatten().copied().collect();
        let Some(&(first, first_target)) = by.first() else {
            continue;
        };
        let mut names: Vec<String> = Vec::new();
        for (j, _) in &by {
            let name = describe(cx, &cx.rules[*j]);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let stronger = cx.rules[first].ir.effect.as_str();
        let effect = rule.ir.effect.as_str();
        let (span, message, label) = match target {
            None => (
                head_span(rule),
                format!(
                    "this {effect} rule can never decide: {} always wins",
                    names.join(" and ")
                ),
                "never decides",
            ),
            Some(t) => {
                let inner = &rule.ir.targets[t];
                (
                    inner.span,
                    format!(
                        "target {} of this {effect} rule can never decide: {} always wins",
                        inner.text,
                        names.join(" and ")
                    ),
                    "never decides",
                )
            }
        };
        let raw = match target {
            Some(t) => target_key(&rule.ir.targets[t]),
            None => rule
                .ir
                .targets
                .iter()
                .map(target_key)
                .collect::<Vec<_>>()
                .join(","),
        };
        let loose_note = if rule.ir.effect == Effect::Allow && fold(&raw) != raw {
            format!(
                "; {stronger} rules match loosely (case and `-`, `.`, `_` do not count), so {} also covers this spelling",
                first_target.text
            )
        } else {
            String::new()
        };
        let help = match target {
            None => format!(
                "{stronger} beats {effect} whatever the order{loose_note}. Remove this rule, or give the {stronger} rule a condition so this one decides when it does not hold"
            ),
            Some(_) => format!(
                "{stronger} beats {effect} whatever the order{loose_note}. Remove this target from the rule"
            ),
        };
        let diagnostic = cx
            .warning(lint, span, message)
            .with_label(label)
            .with_help(help);
        cx.emit(lint, diagnostic);
    }
}

/// `deny rule \`no_delete\` (line 12)`.
fn describe(cx: &Ctx<'_>, rule: &RuleView<'_>) -> String {
    format!(
        "{} rule `{}` (line {})",
        rule.ir.effect.as_str(),
        rule.ir.id,
        cx.line(rule.ir.span.start)
    )
}

/// The rule from its effect to its last target: the part that names what it
/// governs.
pub(super) fn head_span(rule: &RuleView<'_>) -> Span {
    let end = rule
        .ast
        .targets
        .last()
        .map_or(rule.ast.span.end, |t| t.span().end);
    Span::new(rule.ast.span.start, end)
}
