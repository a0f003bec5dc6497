//! The command line as scripts use it: the real binary, its stdout, stderr
//! and exit status, against the contract in `cli.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::mcppol;
use serde_json::Value;
use std::path::{Path, PathBuf};

const POLICY: &str = r#"
policy main {
  deny  "*/delete_repo", "admin_*"
  deny  no_force_push: "git" ~ /^push/
  ask   "github/create_*"
  allow "github/get_*"
  allow "fs/read_file" when args.path inside "/srv"
  allow "search/query" when host.within_budget
}
"#;

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Self {
        Dir(tempfile::tempdir().unwrap())
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Runs `mcppol eval --policy FILE ARGS...`: (status, stdout JSON or Null, stderr).
fn eval(policy: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = mcppol()
        .arg("eval")
        .arg("--policy")
        .arg(policy)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json = if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap()
    };
    (
        out.status.code().unwrap(),
        json,
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn eval_prints_the_contract_fields_in_order() {
    let dir = Dir::new();
    let p = dir.write("p.mcppol", POLICY);
    let out = mcppol()
        .args(["eval", "--tool", "git/push_force", "--policy"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.starts_with(
            r#"{"decision":"deny","source":"deny","reason":"deny_rule","rule_id":"no_force_push""#
        ),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1);
}

#[test]
fn eval_exits_zero_whatever_the_decision() {
    let dir = Dir::new();
    let p = dir.write("p.mcppol", POLICY);
    for (args, decision, rule) in [
        (
            vec!["--tool", "github/get_user"],
            "allow",
            Value::from("allow:0"),
        ),
        (
            vec!["--tool", "github/create_issue"],
            "ask",
            Value::from("ask:0"),
        ),
        (
            vec!["--tool", "x/admin_panel"],
            "deny",
            Value::from("deny:0"),
        ),
        (vec!["--tool", "x/y"], "ask", Value::Null),
    ] {
        let (status, json, _) = eval(&p, &args);
        assert_eq!(status, 0);
        assert_eq!(json["decision"], decision);
        assert_eq!(json["rule_id"], rule);
    }
}

#[test]
fn eval_splits_at_the_first_slash() {
    let dir = Dir::new();
    let p = dir.write("p.mcppol", "policy p { allow \"a/b/c\" }");
    assert_eq!(eval(&p, &["--tool", "a/b/c"]).1["decision"], "allow");
}

#[test]
fn eval_reads_args_annotations_taint_principal_assigns_and_host() {
    let dir = Dir::new();
    let p = dir.write(
        "p.mcppol",
        r#"policy p {
            trusted "docs"
            deny "mail/send" when tainted
            allow a: "fs/read" when args.path inside "/srv" and annotation.read_only
            allow b: "ops/x" when principal == "dana" and assigns.role == "admin"
            allow c: "s/q" when host.budget
        }"#,
    );
    let (_, j, _) = eval(
        &p,
        &["--tool", "mail/send", "--taint", "web", "--taint", "mail"],
    );
    assert_eq!(j["decision"], "deny");
    let (_, j, _) = eval(
        &p,
        &[
            "--tool",
            "fs/read",
            "--args",
            r#"{"path":"/srv/a"}"#,
            "--annotations",
            r#"{"readOnlyHint":true}"#,
            "--trust-server",
        ],
    );
    assert_eq!(j["rule_id"], "a");
    let (_, j, _) = eval(
        &p,
        &[
            "--tool",
            "ops/x",
            "--principal",
            "dana",
            "--assigns",
            r#"{"role":"admin"}"#,
        ],
    );
    assert_eq!(j["rule_id"], "b");
    assert_eq!(
        eval(&p, &["--tool", "s/q", "--host", "budget=true"]).1["rule_id"],
        "c"
    );
    assert_eq!(
        eval(&p, &["--tool", "s/q", "--host", "budget=error"]).1["reason"],
        "no_rule"
    );
    assert_eq!(
        eval(&p, &["--tool", "s/q"]).1["reason"],
        "no_rule",
        "unset host predicates fail closed"
    );
}

#[test]
fn eval_resources_and_prompts() {
    let dir = Dir::new();
    let p = dir.write(
        "p.mcppol",
        r#"policy p { scope tools, resources
        ask resource "wiki/*" }"#,
    );
    let (_, j, _) = eval(&p, &["--resource", "wiki/page"]);
    assert_eq!(
        (j["decision"].as_str(), j["reason"].as_str()),
        (Some("deny"), Some("no_approver"))
    );
    let (_, j, _) = eval(&p, &["--prompt", "wiki/p"]);
    assert_eq!(j["reason"], "out_of_scope");
}

#[test]
fn eval_tool_def_and_lock_decide_pin_and_new() {
    let dir = Dir::new();
    let p = dir.write(
        "p.mcppol",
        r#"policy p { allow "fs/read_file"
        allow "fs/list_*" }"#,
    );
    let def = dir.write(
        "def.json",
        r#"{"name":"read_file","description":"Read a file.","annotations":{"readOnlyHint":true}}"#,
    );
    let fp = String::from_utf8(
        mcppol()
            .arg("fingerprint")
            .arg(&def)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let lock = dir.write(
        "lock.json",
        &format!(
            r#"{{"version":1,"tools":{{"fs/read_file":"{}"}}}}"#,
            fp.trim()
        ),
    );
    let def_arg = format!("@{}", def.display());
    let lock_arg = lock.display().to_string();
    let (_, j, _) = eval(
        &p,
        &[
            "--tool",
            "fs/read_file",
            "--tool-def",
            &def_arg,
            "--lock",
            &lock_arg,
        ],
    );
    assert_eq!(j["source"], "allow");
    let changed = r#"{"name":"read_file","description":"Read a file!"}"#;
    let (_, j, _) = eval(
        &p,
        &[
            "--tool",
            "fs/read_file",
            "--tool-def",
            changed,
            "--lock",
            &lock_arg,
        ],
    );
    assert_eq!(
        (j["source"].as_str(), j["reason"].as_str()),
        (Some("pin"), Some("definition_changed"))
    );
    let (_, j, _) = eval(
        &p,
        &[
            "--tool",
            "fs/list_dir",
            "--tool-def",
            r#"{"name":"list_dir"}"#,
            "--lock",
            &lock_arg,
        ],
    );
    assert_eq!(
        j["reason"], "no_rule",
        "a new tool is not allowed by a glob"
    );
}

#[test]
fn a_policy_that_does_not_load_prints_a_diagnostic_and_exits_two() {
    let dir = Dir::new();
    let p = dir.write("bad.mcppol", "policy p {\n  deny \"a/b\" \"c\"\n}\n");
    let (status, json, stderr) = eval(&p, &["--tool", "a/b"]);
    assert_eq!(status, 2);
    assert_eq!(json, Value::Null, "nothing on stdout");
    assert!(stderr.contains("bad.mcppol:2:14"), "{stderr}");
    assert!(stderr.contains("mcppol::parse::syntax"), "{stderr}");
}

#[test]
fn bad_flags_exit_two_with_nothing_on_stdout() {
    let dir = Dir::new();
    let p = dir.write("p.mcppol", POLICY);
    let two = dir.write("two.mcppol", "policy a {}\npolicy b {}\n");
    let def = r#"{"name":"other"}"#;
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (p.clone(), vec!["--tool", "noslash"]),
        (p.clone(), vec!["--tool", "a/b", "--args", "[1]"]),
        (p.clone(), vec!["--tool", "a/b", "--args", "{bad"]),
        (p.clone(), vec![]),
        (p.clone(), vec!["--tool", "a/b", "--resource", "a/b"]),
        (p.clone(), vec!["--tool", "a/b", "--tool-def", def]),
        (
            p.clone(),
            vec!["--tool", "a/b", "--lock", "/nonexistent/lock.json"],
        ),
        (p.clone(), vec!["--tool", "a/b", "--name", "missing"]),
        (p.clone(), vec!["--tool", "a/b", "--host", "x=maybe"]),
        (two, vec!["--tool", "a/b"]),
        (PathBuf::from("/nonexistent.mcppol"), vec!["--tool", "a/b"]),
    ];
    for (policy, args) in cases {
        let (status, json, stderr) = eval(&policy, &args);
        assert_eq!(status, 2, "{args:?}: {stderr}");
        assert_eq!(json, Value::Null, "{args:?}");
        assert!(!stderr.trim().is_empty(), "{args:?}");
    }
}

#[test]
fn check_exit_statuses() {
    let dir = Dir::new();
    dir.write("ok/a.mcppol", POLICY);
    dir.write("ok/nested/b.mcppol", "policy b { default deny }");
    dir.write("ok/ignored.txt", "not a policy");
    let bad = dir.write("bad/c.mcppol", "policy c {\n  defualt deny\n}\n");
    let ok = dir.0.path().join("ok");
    let out = mcppol().arg("check").arg(&ok).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("checked 2 files: 0 errors"));
    let out = mcppol().arg("check").arg(&ok).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("c.mcppol:2:3") && stderr.contains("did you mean `default`?"),
        "{stderr}"
    );
    let out = mcppol()
        .args(["check", "/nonexistent/dir"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_json_prints_one_object_a_diagnostic() {
    let dir = Dir::new();
    let bad = dir.write(
        "c.mcppol",
        "policy c {\n  defualt deny\n  deny \"a\" \"b\"\n}\n",
    );
    let out = mcppol()
        .args(["check", "--format", "json"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let first = &lines[0];
    for key in ["file", "line", "column", "severity", "code", "message"] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    assert_eq!(
        (first["line"].as_u64(), first["column"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(first["severity"], "error");
    assert_eq!(first["code"], "mcppol::compile::unknown_setting");
    assert_eq!(lines[1]["code"], "mcppol::parse::syntax");
}

#[test]
fn check_passes_the_bundled_policies() {
    let out = mcppol().args(["check", "policies"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fingerprint_of_a_real_tool_from_a_file_and_stdin() {
    let tools: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string("tests/fixtures/tools/server-filesystem.tools.json").unwrap(),
    )
    .unwrap();
    let dir = Dir::new();
    let path = dir.write("t.json", &tools[0].to_string());
    // The value an independent implementation (Python's sorted, compact json) gives.
    let expected = "sha256:762744c16831e2becafdbaf9a15da2660e5670dfa1984a368403145b6e9ac3a9\n";
    mcppol()
        .arg("fingerprint")
        .arg(&path)
        .assert()
        .success()
        .stdout(expected);
    mcppol()
        .args(["fingerprint", "-"])
        .write_stdin(tools[0].to_string())
        .assert()
        .success()
        .stdout(expected);
    mcppol()
        .args(["fingerprint", "-"])
        .write_stdin("[1]")
        .assert()
        .code(1);
    mcppol()
        .args(["fingerprint", "-"])
        .write_stdin("{not json")
        .assert()
        .code(1);
}

#[test]
fn a_name_the_file_lacks_is_refused_with_the_likely_one() {
    for verb in [
        &["eval", "--tool", "fs/read_file"][..],
        &["explain", "--tool", "fs/read_file"][..],
        &[
            "table",
            "--tools",
            "fs=tests/fixtures/tools/server-filesystem.tools.json",
        ][..],
    ] {
        let out = mcppol()
            .args(verb)
            .args([
                "--policy",
                "policies/filesystem.mcppol",
                "--name",
                "filesytem",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{verb:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{verb:?}");
        assert_eq!(
            stderr,
            "error: no policy named `filesytem`; the file has: filesystem\n  help: did you mean `--name filesystem`?\n",
            "{verb:?}"
        );
    }
    // Nothing close: the names the file has are said, and no guess.
    let out = mcppol()
        .args([
            "eval",
            "--tool",
            "fs/read_file",
            "--policy",
            "policies/filesystem.mcppol",
        ])
        .args(["--name", "github"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: no policy named `github`; the file has: filesystem\n"
    );
}
