//! `shadowed_allow`, `shadowed_ask`: a rule that can never decide, because
//! an unconditional rule of a stronger effect matches everything it does.
//!
//! Precedence is `deny > pin > ask > allow` whatever the order, and deny and
//! ask rules match loosely, so `deny "*/delete_repo"` also covers
//! `allow "github/Delete-Repo"`. A deny with a condition does not shadow:
//! when its condition is false the weaker rule still decides. The weaker
//! rule's own condition does not matter: it only narrows it further.

use std::collections::HashMap;

use super::patterns::{target_covers, target_key, FoldedTarget};
use super::{Ctx, RuleView, SHADOWED_ALLOW, SHADOWED_ASK};
use crate::policy::glob::Glob;
use crate::policy::names::fold;
use crate::policy::{IndexedTarget, NameMatcher, Target};
use crate::syntax::{Effect, Item, Span, TargetAst, TargetKind};

pub(super) fn check(cx: &mut Ctx<'_>) {
    // The rules that can shadow: unconditional deny and ask rules. Targets
    // with a literal server are filed by it, so a policy of many servers
    // does not compare every rule with every other.
    let mut by_server: HashMap<&str, Vec<(usize, &Target)>> = HashMap::new();
    let mut any_server: Vec<(usize, &Target)> = Vec::new();
    for (j, outer) in cx.rules.iter().enumerate() {
        if outer.ir.effect == Effect::Allow || outer.ir.condition.is_some() {
            continue;
        }
        for target in &outer.ir.targets {
            match &target.matcher.server {
                Glob::Literal(s) => by_server.entry(s).or_default().push((j, target)),
                _ => any_server.push((j, target)),
            }
        }
    }
    let mut found = Vec::new();
    for (i, rule) in cx.rules.iter().enumerate() {
        let (lint, stronger): (_, &[Effect]) = match rule.ir.effect {
            Effect::Allow => (&SHADOWED_ALLOW, &[Effect::Deny, Effect::Ask]),
            Effect::Ask => (&SHADOWED_ASK, &[Effect::Deny]),
            Effect::Deny => continue,
        };
        let loose = rule.ir.effect.loose();
        let covers: Vec<Option<(usize, &Target)>> = rule
            .ir
            .targets
            .iter()
            .map(|inner| {
                let inner = FoldedTarget::new(inner, loose);
                let literal = match &inner.server {
                    Glob::Literal(s) => by_server.get(&**s).map(Vec::as_slice),
                    _ => None,
                };
                literal
                    .unwrap_or_default()
                    .iter()
                    .chain(&any_server)
                    .filter(|(j, o)| {
                        let outer = &cx.rules[*j].ir;
                        *j != i
                            && stronger.contains(&outer.effect)
                            && outer.kind == rule.ir.kind
                            && target_covers(o, &inner)
                    })
                    .min_by_key(|(j, _)| *j)
                    .copied()
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
    let reported: Vec<usize> = found.iter().map(|f| f.1).collect();
    hidden(cx, &reported);
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
                        cx.text(inner.span),
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
                cx.text(first_target.span)
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

/// Allow and ask rules on tools that the `tools {}` block's `exclude`
/// hides: a hidden tool is denied (`source: visibility`) before any rule
/// is tried. Rules already reported as shadowed are left alone.
fn hidden(cx: &mut Ctx<'_>, reported: &[usize]) {
    let mut excludes: Vec<Target> = Vec::new();
    for item in &cx.ast.items {
        let Item::Tools(block) = item else { continue };
        for entry in block.entries.iter().filter(|e| !e.include) {
            excludes.extend(entry.targets.iter().filter_map(loose_target));
        }
    }
    if excludes.is_empty() {
        return;
    }
    let mut found = Vec::new();
    for (i, rule) in cx.rules.iter().enumerate() {
        let lint = match rule.ir.effect {
            Effect::Allow => &SHADOWED_ALLOW,
            Effect::Ask => &SHADOWED_ASK,
            Effect::Deny => continue,
        };
        if rule.ir.kind != TargetKind::Tool || reported.contains(&i) {
            continue;
        }
        let loose = rule.ir.effect.loose();
        let by: Vec<Option<&Target>> = rule
            .ir
            .targets
            .iter()
            .map(|t| {
                let inner = FoldedTarget::new(t, loose);
                excludes.iter().find(|e| target_covers(e, &inner))
            })
            .collect();
        if by.is_empty() || by.iter().any(Option::is_none) {
            continue;
        }
        let mut texts: Vec<&str> = by.iter().flatten().map(|e| cx.text(e.span)).collect();
        texts.dedup();
        found.push((
            lint,
            head_span(rule),
            rule.ir.effect.as_str(),
            texts.join(", "),
        ));
    }
    for (lint, span, effect, texts) in found {
        let diagnostic = cx
            .warning(
                lint,
                span,
                format!("this {effect} rule can never decide: `exclude {texts}` hides every tool it names"),
            )
            .with_label("only hidden tools")
            .with_help("a tool the `tools {}` block hides is denied before any rule is tried (exclude matches loosely); remove the rule, or narrow the exclude");
        cx.emit(lint, diagnostic);
    }
}

/// A target of the `tools {}` block as an exclude (loose) matches it.
fn loose_target(ast: &TargetAst) -> Option<Target> {
    let (server, name) = match ast {
        TargetAst::Any(_) => (Glob::Any, NameMatcher::Glob(Glob::Any)),
        TargetAst::Pattern(p) => match p.node.split_once('/') {
            Some((s, n)) => (Glob::new(&fold(s)), NameMatcher::Glob(Glob::new(&fold(n)))),
            None => (Glob::Any, NameMatcher::Glob(Glob::new(&fold(&p.node)))),
        },
        TargetAst::Regex { server, regex, .. } => (
            Glob::new(&fold(&server.node)),
            NameMatcher::Regex(
                crate::policy::CompiledRegex::new(&regex.node, crate::compile::REGEX_SIZE_LIMIT)
                    .ok()?,
            ),
        ),
    };
    Some(Target::new(
        ast.span(),
        false,
        IndexedTarget { server, name },
    ))
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
