//! `duplicate_rule`: a rule that repeats an earlier one: same effect, same
//! kind, the same targets (in any order) and the same condition text.

use std::collections::hash_map::{Entry, HashMap};
use std::collections::BTreeSet;

use super::patterns::target_key;
use super::shadowed::head_span;
use super::{Ctx, RuleView, DUPLICATE_RULE};

pub(super) fn check(cx: &mut Ctx<'_>) {
    let mut first_of: HashMap<Key, usize> = HashMap::new();
    let mut found = Vec::new();
    for (i, rule) in cx.rules.iter().enumerate() {
        match first_of.entry(key(cx, rule)) {
            Entry::Occupied(first) => found.push((i, *first.get())),
            Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    for (i, first) in found {
        let (rule, earlier) = (&cx.rules[i], &cx.rules[first]);
        let line = cx.line(earlier.ir.span.start);
        let diagnostic = cx
            .warning(
                &DUPLICATE_RULE,
                head_span(rule),
                format!(
                    "this rule repeats {} rule `{}` on line {line}",
                    earlier.ir.effect.as_str(),
                    earlier.ir.id
                ),
            )
            .with_label("same effect, targets and condition")
            .with_help(format!(
                "remove one of the two; if they were meant to differ, fix the one that is wrong (the first is on line {line})"
            ));
        cx.emit(&DUPLICATE_RULE, diagnostic);
    }
}

type Key = (&'static str, &'static str, BTreeSet<String>, Option<String>);

fn key(cx: &Ctx<'_>, rule: &RuleView<'_>) -> Key {
    let condition = rule.ast.condition.as_ref().map(|c| {
        let text = cx.text(crate::syntax::Span::new(c.keyword.start, rule.ast.span.end));
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    });
    (
        rule.ir.effect.as_str(),
        rule.ir.kind.as_str(),
        rule.ir.targets.iter().map(target_key).collect(),
        condition,
    )
}
