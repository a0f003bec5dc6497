//! The `roots` setting: the folders a server may be given, pinned by the
//! policy, canonicalized at load, and exposed as `Policy::roots()`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::PolicySet;

fn roots_of(text: &str) -> Option<Vec<String>> {
    let set = PolicySet::from_text("t.mcppol", text).unwrap();
    let policy = set.get("p").unwrap();
    policy.roots().map(<[String]>::to_vec)
}

#[test]
fn without_the_setting_there_are_no_roots() {
    assert_eq!(roots_of("policy p { allow \"a/b\" }"), None);
}

#[test]
fn roots_are_canonical() {
    let roots = roots_of(r#"policy p { roots "/srv//work/", "/tmp/x/../y", "/srv/work" }"#);
    assert_eq!(
        roots,
        Some(vec!["/srv/work".to_string(), "/tmp/y".to_string()])
    );
}

#[test]
fn a_relative_or_bare_root_is_refused_with_a_fix() {
    for (text, bad) in [
        (r#"policy p { roots "srv/work" }"#, "srv/work"),
        (r#"policy p { roots "./work" }"#, "./work"),
        ("policy p { roots work }", "work"),
    ] {
        let err = PolicySet::from_text("t.mcppol", text).unwrap_err();
        let d = &err.diagnostics[0];
        assert_eq!(d.code, "mcppol::compile::bad_roots", "{text}");
        assert!(d.message.contains(bad), "{}", d.message);
        assert!(
            d.help.as_deref().unwrap_or("").contains("/srv/"),
            "{:?}",
            d.help
        );
    }
}

#[test]
fn a_root_that_does_not_canonicalize_is_refused() {
    let err = PolicySet::from_text("t.mcppol", r#"policy p { roots "/srv/a\\b" }"#).unwrap_err();
    assert_eq!(err.diagnostics[0].code, "mcppol::compile::bad_roots");
}

#[test]
fn roots_set_twice_is_an_error() {
    let err =
        PolicySet::from_text("t.mcppol", "policy p { roots \"/a\"\n roots \"/b\" }").unwrap_err();
    assert_eq!(
        err.diagnostics[0].code,
        "mcppol::compile::duplicate_setting"
    );
}

#[test]
fn fmt_keeps_roots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(
        &path,
        "policy p {\nroots   \"/srv/work\" ,\"/tmp\"\n   allow \"a/b\"\n}\n",
    )
    .unwrap();
    crate::common::mcppol()
        .args(["fmt"])
        .arg(&path)
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "policy p {\n  roots \"/srv/work\", \"/tmp\"\n  allow \"a/b\"\n}\n"
    );
}

#[test]
fn explain_names_the_pinned_roots() {
    let out = crate::common::mcppol()
        .args([
            "explain",
            "--policy",
            "tests/fixtures/ok/roots.mcppol",
            "--tool",
            "fs/read_file",
            "--args",
            r#"{"path": "/srv/work/a"}"#,
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(r#"roots: pinned to "/srv/work", "/tmp/scratch""#),
        "{text}"
    );
    let out = crate::common::mcppol()
        .args([
            "explain",
            "--format",
            "json",
            "--policy",
            "tests/fixtures/ok/roots.mcppol",
            "--tool",
            "fs/read_file",
        ])
        .assert()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        json["roots"],
        serde_json::json!(["/srv/work", "/tmp/scratch"])
    );
}
