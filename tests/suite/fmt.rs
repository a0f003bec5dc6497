#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `mcppol fmt`: golden output, idempotence, and that formatting keeps the
//! decisions. That it keeps the compiled rules too (and the property test
//! over random policies) is a unit test beside the formatter, in
//! `src/fmt/meaning.rs`, since the compiled rules are not public.

use mcppol::test_util::fmt_check::{corpus, decisions, fmt};
use mcppol::{format, FmtError};

#[test]
fn golden_output() {
    insta::glob!("..", "fixtures/fmt/*.mcppol", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        insta::assert_snapshot!(fmt(&path.display().to_string(), &text));
    });
}

#[test]
fn idempotent_and_meaning_preserving_on_the_corpus() {
    for (origin, text) in corpus() {
        let once = fmt(&origin, &text);
        let twice = fmt(&origin, &once);
        assert_eq!(once, twice, "{origin} is not idempotent");
        assert_eq!(
            decisions(&origin, &text),
            decisions(&origin, &once),
            "{origin} decides differently"
        );
        for line in once.lines() {
            assert!(!line.ends_with(' '), "{origin}: trailing space in {line:?}");
        }
    }
}

#[test]
fn the_bundled_policies_are_formatted() {
    for (origin, text) in corpus()
        .into_iter()
        .filter(|(o, _)| o.starts_with("policies"))
    {
        assert_eq!(fmt(&origin, &text), text, "run `mcppol fmt {origin}`");
    }
}

#[test]
fn syntax_errors_are_not_formatted() {
    assert!(matches!(
        format("bad.mcppol", "policy p {\n  deny \"a\" \"b\"\n}\n"),
        Err(FmtError::Syntax(_))
    ));
}
