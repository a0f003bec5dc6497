//! Loose matching only adds matches (semantics.md, "Loose and exact"):
//! whatever a pattern matches exactly, it also matches loosely, for every
//! name, over all of Unicode's cased characters.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;

use mcppol::{Policy, PolicySet, Request, Verdict};
use proptest::prelude::*;

/// Every character that case mapping changes, in either direction.
fn cased() -> &'static [char] {
    static CASED: OnceLock<Vec<char>> = OnceLock::new();
    CASED.get_or_init(|| {
        (0..=char::MAX as u32)
            .filter_map(char::from_u32)
            .filter(|c| {
                let lower: String = c.to_lowercase().collect();
                let upper: String = c.to_uppercase().collect();
                lower != c.to_string() || upper != c.to_string()
            })
            .collect()
    })
}

/// The cased characters whose lower case is more than one character.
fn long_lower() -> &'static [char] {
    static LONG: OnceLock<Vec<char>> = OnceLock::new();
    LONG.get_or_init(|| {
        cased()
            .iter()
            .copied()
            .filter(|c| c.to_lowercase().count() > 1)
            .collect()
    })
}

fn pick(policy: &str) -> Policy {
    let set =
        PolicySet::from_text("p.mcppol", policy).unwrap_or_else(|e| panic!("{}", e.render(false)));
    (**set.pick(None).unwrap()).clone()
}

/// One policy that allows the pattern (exact) and one that denies it
/// (loose), decided for the same name.
fn exact_and_loose(pattern: &str, name: &str) -> (bool, bool) {
    let exact = pick(&format!(
        "policy p {{ default deny\n allow \"s/{pattern}\" }}"
    ));
    let loose = pick(&format!("policy p {{ deny \"s/{pattern}\" }}"));
    let r = Request::tool("s", name);
    (
        exact.decide(&r).decision == Verdict::Allow,
        loose.decide(&r).decision == Verdict::Deny,
    )
}

#[test]
fn a_question_mark_lines_up_with_a_character_whose_lower_case_is_two() {
    // `İ` lower-cases to `i` and a combining dot: folding keeps it whole.
    let p = pick(r#"policy p { deny "*/a?b" }"#);
    assert_eq!(p.decide(&Request::tool("s", "aİb")).decision, Verdict::Deny);
    assert_eq!(p.decide(&Request::tool("s", "AİB")).decision, Verdict::Deny);
    let (exact, loose) = exact_and_loose("a?b", "aİb");
    assert!(exact && loose);
}

#[test]
fn the_cased_characters_are_many() {
    assert!(cased().len() > 2500, "{}", cased().len());
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(cased()).prop_map(String::from),
        2 => proptest::sample::select(long_lower()).prop_map(String::from),
        1 => Just("?".to_string()),
        1 => Just("*".to_string()),
        1 => Just("_".to_string()),
        1 => Just("a".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A name built from the pattern (wildcards replaced by cased
    /// characters) always matches it exactly, and then must match loosely.
    #[test]
    fn whatever_matches_exactly_matches_loosely(
        pattern in proptest::collection::vec(piece(), 1..6),
        fills in proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(cased()),
                proptest::sample::select(long_lower()),
            ],
            6,
        ),
    ) {
        let text: String = pattern.concat();
        let name: String = pattern
            .iter()
            .zip(fills.iter().cycle())
            .map(|(p, c)| match p.as_str() {
                "?" | "*" => c.to_string(),
                other => other.to_string(),
            })
            .collect();
        let (exact, loose) = exact_and_loose(&text, &name);
        prop_assert!(exact, "{text} does not match {name} exactly");
        prop_assert!(loose, "{text} matches {name} exactly but not loosely");
    }

    /// For any two names, an exact match implies a loose one.
    #[test]
    fn exact_implies_loose_for_any_name(
        pattern in proptest::collection::vec(piece(), 1..5),
        name in proptest::collection::vec(proptest::sample::select(cased()), 0..5),
    ) {
        let text: String = pattern.concat();
        let name: String = name.into_iter().collect();
        let (exact, loose) = exact_and_loose(&text, &name);
        prop_assert!(!exact || loose, "{text} matches {name} exactly but not loosely");
    }
}
