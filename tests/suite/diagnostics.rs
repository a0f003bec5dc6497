//! Golden tests: every bad policy under `tests/fixtures/errors/` is refused,
//! and its rendered diagnostics (file, line, column, label on the bad text,
//! help, stable code) are checked against a snapshot.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::{HostPredicates, LoadOptions, PolicySet, Severity};

fn options() -> LoadOptions {
    let mut host = HostPredicates::new();
    host.register("within_budget", |_| Ok(true));
    LoadOptions { host: Some(host) }
}

#[test]
fn bad_policies_are_refused_with_named_entries() {
    insta::glob!("..", "fixtures/errors/*.mcppol", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let origin = format!(
            "tests/fixtures/errors/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let error = match PolicySet::from_text_with(&origin, &text, &options()) {
            Ok(_) => panic!("{origin} loaded, but it has an error"),
            Err(e) => e,
        };
        for d in &error.diagnostics {
            assert!(
                d.code.starts_with("mcppol::parse::") || d.code.starts_with("mcppol::compile::"),
                "{origin}: code {}",
                d.code
            );
            assert!(d.help.is_some(), "{origin}: `{}` has no help", d.message);
            assert!(d.span.end <= text.len(), "{origin}: span out of the text");
            assert_eq!(d.severity, Severity::Error);
        }
        insta::assert_snapshot!(error.render(false));
    });
}

#[test]
fn several_mistakes_are_all_reported() {
    let text = std::fs::read_to_string("tests/fixtures/errors/31_many_errors.mcppol").unwrap();
    let error = PolicySet::from_text("many.mcppol", &text).unwrap_err();
    let codes: Vec<&str> = error.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [
            "mcppol::compile::unknown_setting",
            "mcppol::parse::syntax",
            "mcppol::compile::unknown_annotation",
            "mcppol::compile::duplicate_rule_id",
            "mcppol::compile::in_needs_list",
        ]
    );
}

#[test]
fn good_fixtures_load_clean() {
    insta::glob!("..", "fixtures/ok/*.mcppol", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        if let Err(e) = PolicySet::from_text_with("ok.mcppol", &text, &options()) {
            panic!("{}", e.render(false));
        }
    });
}

#[test]
fn the_bundled_policies_load_clean() {
    for entry in std::fs::read_dir("policies").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mcppol") {
            if let Err(e) = PolicySet::from_file(&path, &LoadOptions::default()) {
                panic!("{}", e.render(false));
            }
        }
    }
}
