//! `$CWD` path roots: the request's working folder, known only when the
//! host gives one; otherwise every test on such a root fails closed. And an
//! unknown taint (`taint_unknown`) makes `tainted` fail closed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::mcppol;
use mcppol::{PolicySet, Request, Verdict};
use serde_json::json;

const POLICY: &str = r#"
policy p {
  default deny
  deny  outside: "claude/Write" when args.file_path escapes "$CWD"
  ask   private: "claude/Read" when args.file_path escapes "$CWD/public"
  allow edits: "claude/Edit", "claude/Write" when args.file_path inside "$CWD"
  allow reads: "claude/Read"
  deny  tainted_send: "mail/send" when tainted
  allow "mail/send" when not tainted
}
"#;

fn decide(tool: &str, path: &str, cwd: Option<&str>) -> (Verdict, String, Option<String>) {
    let set = PolicySet::from_text("p.mcppol", POLICY).unwrap();
    let p = set.get("p").unwrap();
    let args = json!({ "file_path": path });
    let mut r = Request::tool("claude", tool).with_args(&args);
    if let Some(cwd) = cwd {
        r = r.with_cwd(cwd);
    }
    let d = p.decide(&r);
    (
        d.decision,
        d.reason.as_str().to_string(),
        d.rule_id.map(|s| s.to_string()),
    )
}

#[test]
fn cwd_stands_for_the_requests_folder() {
    let cwd = Some("/home/dev/project");
    assert_eq!(
        decide("Edit", "/home/dev/project/src/main.rs", cwd).0,
        Verdict::Allow
    );
    assert_eq!(decide("Edit", "src/main.rs", cwd).0, Verdict::Allow);
    assert_eq!(decide("Edit", "/home/dev/project", cwd).0, Verdict::Allow);
    // Outside the folder, or climbing out of it: no allow.
    assert_eq!(decide("Edit", "/home/dev/projectX/a", cwd).0, Verdict::Deny);
    assert_eq!(
        decide("Edit", "/home/dev/project/../x", cwd).0,
        Verdict::Deny
    );
    let (v, _, rule) = decide("Write", "/etc/passwd", cwd);
    assert_eq!((v, rule.as_deref()), (Verdict::Deny, Some("outside")));
    // `$CWD/public`: a sub-folder of the working folder.
    let (v, _, rule) = decide("Read", "/home/dev/project/src/key", cwd);
    assert_eq!((v, rule.as_deref()), (Verdict::Ask, Some("private")));
    let (v, _, rule) = decide("Read", "/home/dev/project/public/key", cwd);
    assert_eq!((v, rule.as_deref()), (Verdict::Allow, Some("reads")));
    // The cwd itself is canonicalized first.
    assert_eq!(
        decide("Edit", "/home/dev/x/a", Some("/home/dev/project/../x/")).0,
        Verdict::Allow
    );
}

#[test]
fn without_a_usable_cwd_the_test_fails_closed() {
    for cwd in [None, Some("relative/dir"), Some("/bad\\dir"), Some("")] {
        // The allow does not match: the default denies.
        let (v, reason, rule) = decide("Edit", "/home/dev/project/a", cwd);
        assert_eq!(
            (v, reason.as_str(), rule),
            (Verdict::Deny, "no_rule", None),
            "{cwd:?}"
        );
        // The deny matches as a failed predicate.
        let (v, reason, rule) = decide("Write", "/home/dev/project/a", cwd);
        assert_eq!(
            (v, reason.as_str(), rule.as_deref()),
            (Verdict::Deny, "predicate_failed", Some("outside")),
            "{cwd:?}"
        );
        // The ask matches too.
        let (v, _, rule) = decide("Read", "/anything", cwd);
        assert_eq!(
            (v, rule.as_deref()),
            (Verdict::Ask, Some("private")),
            "{cwd:?}"
        );
    }
}

#[test]
fn an_unknown_taint_fails_closed() {
    let set = PolicySet::from_text("p.mcppol", POLICY).unwrap();
    let p = set.get("p").unwrap();
    let clean = p.decide(&Request::tool("mail", "send"));
    assert_eq!(clean.decision, Verdict::Allow);
    let unknown = p.decide(&Request::tool("mail", "send").with_taint_unknown());
    assert_eq!(
        (
            unknown.decision,
            unknown.reason.as_str(),
            unknown.rule_id.as_deref()
        ),
        (Verdict::Deny, "predicate_failed", Some("tainted_send"))
    );
}

#[test]
fn eval_and_explain_take_cwd_and_taint_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcppol");
    std::fs::write(&file, POLICY).unwrap();
    let out = mcppol()
        .args(["eval", "--policy"])
        .arg(&file)
        .args([
            "--tool",
            "claude/Edit",
            "--args",
            r#"{"file_path": "src/a.rs"}"#,
        ])
        .args(["--cwd", "/w/p"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["decision"].as_str(), v["rule_id"].as_str()),
        (Some("allow"), Some("edits"))
    );

    let out = mcppol()
        .args(["explain", "--policy"])
        .arg(&file)
        .args([
            "--tool",
            "claude/Edit",
            "--args",
            r#"{"file_path": "src/a.rs"}"#,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("`$CWD` is unknown (no cwd given): the test fails closed"),
        "{text}"
    );
    let out = mcppol()
        .args(["explain", "--policy"])
        .arg(&file)
        .args([
            "--tool",
            "claude/Edit",
            "--args",
            r#"{"file_path": "src/a.rs"}"#,
        ])
        .args(["--cwd", "/w/p"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(r#""src/a.rs" is inside /w/p (`$CWD`)"#),
        "{text}"
    );

    let out = mcppol()
        .args(["eval", "--policy"])
        .arg(&file)
        .args(["--tool", "mail/send", "--taint-unknown"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["decision"].as_str(), v["reason"].as_str()),
        (Some("deny"), Some("predicate_failed"))
    );
}

#[test]
fn policy_tests_state_a_cwd_and_an_unknown_taint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.mcppol"), POLICY).unwrap();
    std::fs::write(
        dir.path().join("p.mcppoltest"),
        r#"cwd /w/p
case an edit inside the folder
  tool claude/Edit
  args {"file_path": "/w/p/a"}
  expect allow rule_id=edits
case the same edit with no folder known
  tool claude/Edit
  args {"file_path": "/w/p/a"}
  cwd /elsewhere
  expect deny source=default reason=no_rule
case an unknown taint
  tool mail/send
  taint_unknown
  expect deny reason=predicate_failed rule_id=tainted_send
"#,
    )
    .unwrap();
    let out = mcppol().arg("test").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("3 passed, 0 failed"), "{text}");
}

#[test]
fn check_does_not_call_a_cwd_root_relative() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.mcppol");
    std::fs::write(&file, POLICY).unwrap();
    mcppol()
        .args(["check", "--deny-warnings"])
        .arg(&file)
        .assert()
        .success();
}
