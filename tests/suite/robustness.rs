//! No input makes loading or deciding panic or hang: deep nesting, huge
//! files, pathological regexes and arbitrary text get errors or answers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use mcppol::{PolicySet, Request};
use proptest::prelude::*;
use serde_json::{json, Value};

fn first_code(text: &str) -> String {
    match PolicySet::from_text("t.mcppol", text) {
        Ok(_) => "loaded".into(),
        Err(e) => e.diagnostics[0].code.to_string(),
    }
}

#[test]
fn deeply_nested_parentheses_are_refused() {
    let deep = format!(
        "policy p {{ deny * when {}tainted{} }}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert_eq!(first_code(&deep), "mcppol::parse::too_deep");
}

#[test]
fn deeply_nested_literals_are_refused() {
    let deep = format!(
        "policy p {{ deny * when args.x == {}1{} }}",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    assert_eq!(first_code(&deep), "mcppol::parse::too_deep");
}

#[test]
fn nesting_at_the_limit_loads() {
    // The policy's own braces count: 1 + 63 parentheses is 64 deep.
    let ok = format!(
        "policy p {{ deny * when {}tainted{} }}",
        "(".repeat(63),
        ")".repeat(63)
    );
    assert_eq!(first_code(&ok), "loaded");
}

#[test]
fn long_flat_conditions_load_and_decide() {
    let terms = vec!["args.n == 1"; 20_000].join(" and ");
    let nots = "not ".repeat(100_001);
    let text =
        format!("policy p {{ allow \"t/x\" when {terms}\n deny \"t/y\" when {nots} tainted }}");
    let set = PolicySet::from_text("t.mcppol", &text).unwrap();
    let p = set.pick(None).unwrap();
    let args = json!({"n": 1});
    assert!(p
        .decide(&Request::tool("t", "x").with_args(&args))
        .is_allow());
    assert_eq!(
        p.decide(&Request::tool("t", "y")).decision.as_str(),
        "deny",
        "odd number of nots"
    );
}

#[test]
fn huge_files_are_refused_before_parsing() {
    let rule = "  deny \"server/tool\"\n";
    let huge = format!(
        "policy p {{\n{}}}\n",
        rule.repeat(mcppol::MAX_FILE_BYTES / rule.len() + 10)
    );
    assert_eq!(first_code(&huge), "mcppol::parse::file_too_large");
}

#[test]
fn many_rules_load() {
    let rules: String = (0..20_000)
        .map(|i| format!("  allow \"s{}/t{i}\"\n", i % 100))
        .collect();
    let text = format!("policy p {{\n{rules}}}\n");
    let set = PolicySet::from_text("t.mcppol", &text).unwrap();
    let p = set.pick(None).unwrap();
    assert_eq!(
        p.decide(&Request::tool("s42", "t19942")).rule_id.as_deref(),
        Some("allow:19942")
    );
}

#[test]
fn regexes_that_would_blow_up_are_refused() {
    assert_eq!(
        first_code(r#"policy p { deny "x" ~ /(a{1000}){1000}/ }"#),
        "mcppol::compile::regex_too_big"
    );
    assert_eq!(
        first_code(
            r#"policy p { deny "x/y" when args.s matches /((((((((((a*)*)*)*)*)*)*)*)*)*)*$/ }"#
        ),
        "loaded"
    );
}

#[test]
fn catastrophic_backtracking_shapes_are_linear() {
    // A backtracking engine takes exponential time here; Rust's regex does not.
    let set = PolicySet::from_text(
        "t.mcppol",
        r#"policy p { deny "x/y" when args.s matches /^(a+)+$/ }"#,
    )
    .unwrap();
    let p = set.pick(None).unwrap();
    let args = json!({"s": format!("{}b", "a".repeat(100_000))});
    assert_eq!(
        p.decide(&Request::tool("x", "y").with_args(&args))
            .reason
            .as_str(),
        "no_rule"
    );
}

#[test]
fn arguments_nested_too_deep_fail_closed() {
    let set = PolicySet::from_text(
        "t.mcppol",
        r#"policy p {
            deny "t/x" when args.a.b == "secret"
            allow "t/x" when args.a.b == "public" }"#,
    )
    .unwrap();
    let p = set.pick(None).unwrap();
    let mut value = json!({"b": "secret"});
    // Deeper than the walk searches; shallow enough that dropping the value
    // (serde_json drops recursively) stays within a test thread's stack.
    for _ in 0..500 {
        value = Value::Array(vec![value]);
    }
    let args = json!({ "a": value });
    let x = p.decide(&Request::tool("t", "x").with_args(&args));
    assert_eq!(
        (x.decision.as_str(), x.reason.as_str()),
        ("deny", "predicate_failed")
    );
    let shallow = json!({"a": [[{"b": "public"}]]});
    assert!(p
        .decide(&Request::tool("t", "x").with_args(&shallow))
        .is_allow());
}

#[test]
fn invalid_utf8_and_binary_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin.mcppol");
    std::fs::write(&path, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let err = PolicySet::from_file(&path, &Default::default()).unwrap_err();
    assert_eq!(err.diagnostics[0].code, "mcppol::io::read");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_000, ..ProptestConfig::default() })]

    /// Token soup from the language's own words never panics the parser or compiler.
    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(0..common::WORDS.len(), 0..60)) {
        let text: Vec<&str> = tokens.iter().map(|i| common::WORDS[*i]).collect();
        let _ = PolicySet::from_text("soup.mcppol", &text.join(" "));
    }

    /// Arbitrary text never panics either.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let _ = PolicySet::from_text("any.mcppol", &text);
    }

    /// Whatever loads decides any request without panicking.
    #[test]
    fn loaded_policies_decide_anything(
        tokens in prop::collection::vec(0..common::WORDS.len(), 0..40),
        server in "[a-zA-Z_./-]{0,8}", name in "\\PC{0,12}", n in any::<i64>(),
    ) {
        let text = format!("policy p {{ {} }}", tokens.iter().map(|i| common::WORDS[*i]).collect::<Vec<_>>().join(" "));
        if let Ok(set) = PolicySet::from_text("p.mcppol", &text) {
            let args = json!({"x": n, "l": [name.clone()], "k": name.clone()});
            for policy in set.iter() {
                let _ = policy.decide(&Request::tool(&server, &name).with_args(&args).with_taint(&["w"]));
                let _ = policy.decide(&Request::resource(&server, &name).without_approver());
            }
        }
    }
}
