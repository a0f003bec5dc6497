#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The policy author's verbs, run as the real binary: explain, fmt, test,
//! table, lock.

use crate::common::mcppol;
use serde_json::{json, Value};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = mcppol().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn explain_names_the_deciding_rule_line() {
    let (code, out, err) = run(&[
        "explain",
        "--policy",
        "policies/filesystem.mcppol",
        "--tool",
        "fs/read_text_file",
        "--args",
        r#"{"path": "/etc/passwd"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("policies/filesystem.mcppol:15:3: deny outside: matched"),
        "{out}"
    );
    assert!(
        out.contains("`args.path` is a string (\"/etc/passwd\")"),
        "{out}"
    );
    assert!(out.trim_end().ends_with(
        "decision: deny (source: deny, reason: deny_rule, rule_id: outside) at policies/filesystem.mcppol:15:3"
    ), "{out}");
}

#[test]
fn explain_names_a_missing_argument_and_a_wrong_type() {
    let (_, out, _) = run(&[
        "explain",
        "--policy",
        "policies/mail.mcppol",
        "--tool",
        "mail/send_message",
        "--args",
        r#"{"to": 42}"#,
    ]);
    assert!(out.contains("`args.recipient_count` is missing"), "{out}");
    assert!(
        out.contains("`args.to` is a number (42), not a string"),
        "{out}"
    );
    assert!(out.contains("ask external: predicate failed"), "{out}");
}

#[test]
fn explain_json_ends_with_evals_decision() {
    let args = [
        "--policy",
        "policies/filesystem.mcppol",
        "--tool",
        "fs/write_file",
        "--args",
        r#"{"path": "/srv/sandbox/a"}"#,
        "--no-approver",
    ];
    let (_, eval_out, _) = run(&[&["eval"], &args[..]].concat());
    let (code, out, _) = run(&[&["explain", "--format", "json"], &args[..]].concat());
    assert_eq!(code, 0);
    let explained: Value = serde_json::from_str(&out).unwrap();
    let decided: Value = serde_json::from_str(&eval_out).unwrap();
    for key in ["decision", "source", "reason", "rule_id", "line"] {
        assert_eq!(explained["decision"][key], decided[key], "{key}");
    }
    let steps = explained["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["rule_id"], "changes");
    assert!(steps.iter().all(|s| s["line"].as_u64().is_some()));
}

#[test]
fn explain_skips_globs_for_a_new_tool() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("empty.lock");
    std::fs::write(&lock, r#"{"version": 1, "tools": {}}"#).unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(&policy, "policy p {\n  allow \"fs/*\"\n}\n").unwrap();
    let (_, out, _) = run(&[
        "explain",
        "--policy",
        policy.to_str().unwrap(),
        "--tool",
        "fs/new_tool",
        "--tool-def",
        r#"{"name": "new_tool"}"#,
        "--lock",
        lock.to_str().unwrap(),
    ]);
    assert!(out.contains("allow allow:0: skipped new tool"), "{out}");
    assert!(
        out.contains("decision: ask (source: default, reason: no_rule"),
        "{out}"
    );
}

#[test]
fn explain_bad_flags_are_usage_errors() {
    let (code, out, _) = run(&[
        "explain",
        "--policy",
        "policies/mail.mcppol",
        "--tool",
        "nosplit",
    ]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
}

#[test]
fn test_runs_the_bundled_policy_tests_with_full_coverage() {
    let (code, out, err) = run(&["test", "--coverage", "policies/"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("coverage: 0 rule(s) uncovered"), "{out}");
    assert!(out.ends_with(" passed, 0 failed\n"), "{out}");
}

#[test]
fn test_reports_expected_actual_line_and_uncovered_rules() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.mcppol"),
        "policy p {\n  deny \"a/x\"\n  allow \"a/y\"\n  ask \"a/z\"\n}\n",
    )
    .unwrap();
    let tests = dir.path().join("p.mcppoltest");
    std::fs::write(
        &tests,
        "# no `policy` line: p.mcppol next to it\n\ncase x is denied\n  tool a/x\n  expect deny rule_id=deny:0\n\ncase y is wrongly expected\n  tool a/y\n  expect ask source=ask\n\nuncovered ask:0 kept to show a justified gap\n",
    )
    .unwrap();
    let (code, out, _) = run(&["test", "--coverage", tests.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("p.mcppoltest:7: FAIL y is wrongly expected"),
        "{out}"
    );
    assert!(out.contains("expected: ask source=ask"), "{out}");
    assert!(
        out.contains("actual:   allow source=allow reason=allow_rule rule_id=allow:0"),
        "{out}"
    );
    assert!(
        out.contains("uncovered (justified): ask rule `ask:0`"),
        "{out}"
    );
    assert!(!out.contains("uncovered: allow"), "{out}");

    let (code, out, _) = run(&["test", "--format", "json", tests.to_str().unwrap()]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let failure = &v["files"][0]["failures"][0];
    assert_eq!(failure["line"], 7);
    assert_eq!(failure["actual"]["decision"], "allow");
    assert_eq!(failure["expected"]["decision"], "ask");
}

#[test]
fn test_run_runs_only_the_cases_whose_name_matches() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.mcppol"),
        "policy p {\n  deny \"a/x\"\n  allow \"a/y\"\n}\n",
    )
    .unwrap();
    let tests = dir.path().join("p.mcppoltest");
    std::fs::write(
        &tests,
        "case x is denied\n  tool a/x\n  expect deny\n\ncase y is wrongly expected\n  tool a/y\n  expect deny\n\ncase y again, right\n  tool a/y\n  expect allow\n",
    )
    .unwrap();
    let path = tests.to_str().unwrap();
    // The failing case is left out: the run passes.
    let (code, out, err) = run(&["test", "--run", "denied|right$", path]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("p.mcppoltest: 2 case(s), 2 passed, 0 failed"),
        "{out}"
    );
    assert!(
        out.contains("1 case(s) not run: their names do not match `--run`"),
        "{out}"
    );
    assert!(out.ends_with("2 passed, 0 failed\n"), "{out}");
    // Matched anywhere in the name.
    let (code, out, _) = run(&["test", "--run", "wrongly", path]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL y is wrongly expected"), "{out}");
    assert!(out.ends_with("0 passed, 1 failed\n"), "{out}");
    let (code, out, _) = run(&["test", "--run", "denied", "--format", "json", path]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["cases"].as_u64(), v["not_run"].as_u64()),
        (Some(1), Some(2))
    );
    // Nothing matched is no green run; a bad regex and `--coverage` are
    // usage errors.
    let (code, out, err) = run(&["test", "--run", "nothing like it", path]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("no case name matches `--run nothing like it` (3 case(s) in all)"),
        "{err}"
    );
    let (code, _, err) = run(&["test", "--run", "(", path]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a valid regex"), "{err}");
    let (code, _, err) = run(&["test", "--run", "x", "--coverage", path]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot be combined"), "{err}");
}

#[test]
fn test_file_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.mcppol"), "policy p {}\n").unwrap();
    let tests = dir.path().join("p.mcppoltest");
    std::fs::write(&tests, "case c\n  tool a/x\n  expect maybe\n").unwrap();
    let (code, _, err) = run(&["test", tests.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("p.mcppoltest:3: expect: `maybe` is not a decision"),
        "{err}"
    );
}

const FS_TOOLS: &str = "tests/fixtures/tools/server-filesystem.tools.json";

#[test]
fn table_shows_every_listed_tool_with_and_without_an_approver() {
    let (code, out, err) = run(&[
        "table",
        "--policy",
        "policies/filesystem.mcppol",
        "--tools",
        FS_TOOLS,
        "--server",
        "fs",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("fs/")).count(),
        14,
        "{out}"
    );
    // Every tool is reached by `fs/*` denies on its path arguments: each
    // shows what it depends on, then each outcome.
    let lines: Vec<&str> = out.lines().collect();
    let write = lines
        .iter()
        .position(|l| l.starts_with("fs/write_file "))
        .unwrap();
    assert_eq!(
        lines[write].split_whitespace().collect::<Vec<_>>(),
        [
            "fs/write_file",
            "depends",
            "on",
            "args.destination,",
            "args.path,",
            "args.paths,",
            "args.source"
        ]
    );
    let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        words(lines[write + 1]),
        "when outside deny outside deny outside"
    );
    assert_eq!(
        words(lines[write + 2]),
        "when dotfiles deny dotfiles deny dotfiles"
    );
    assert_eq!(
        words(lines[write + 3]),
        "otherwise ask changes deny changes"
    );
    assert!(lines[write + 4].starts_with("fs/"), "{out}");
    assert!(!out.contains("deny  (default)  deny  (default)  "), "{out}");

    let (_, out, _) = run(&[
        "table",
        "--policy",
        "policies/filesystem.mcppol",
        "--tools",
        &format!("fs={FS_TOOLS}"),
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 14);
    let list = tools
        .iter()
        .find(|t| t["tool"] == "list_allowed_directories")
        .unwrap();
    // The bare call's decisions, as before.
    assert_eq!(list["with_approver"]["decision"], "allow");
    assert_eq!(list["without_approver"]["rule_id"], "allow:2");
    assert_eq!(
        list["depends_on"],
        serde_json::json!(["args.destination", "args.path", "args.paths", "args.source"])
    );
    let outcomes = list["outcomes"].as_array().unwrap();
    let when: Vec<&Value> = outcomes.iter().map(|o| &o["when"]).collect();
    assert_eq!(when, [&json!("outside"), &json!("dotfiles"), &Value::Null]);
    assert_eq!(outcomes[0]["with_approver"]["reason"], "deny_rule");
    assert_eq!(outcomes[2]["without_approver"]["rule_id"], "allow:2");
}

/// A tool that no condition the listing cannot settle reaches is one line;
/// one that taint, the principal or an argument can change shows each
/// outcome, an ask without an approver included, and `--lock` puts the
/// tool's approval after its name.
#[test]
fn table_shows_what_a_decision_depends_on_and_each_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.mcppol");
    std::fs::write(
        &policy,
        r#"policy p {
  default ask
  trusted "gh"
  deny "gh/*" when annotation.destructive and principal != "admin"
  deny force: "gh/push" when args.force == true
  ask reviewed: "gh/create_issue" when tainted
  allow "gh/get_user", "gh/create_issue"
}
"#,
    )
    .unwrap();
    let listing = dir.path().join("gh.json");
    let read_only = json!({"readOnlyHint": true, "destructiveHint": false});
    std::fs::write(
        &listing,
        json!({"gh": [
            {"name": "get_user", "annotations": read_only},
            {"name": "create_issue", "annotations": {"destructiveHint": false}},
            {"name": "push"},
        ]})
        .to_string(),
    )
    .unwrap();
    let (code, lock, err) = run(&["lock", "--tools", listing.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let lock_path = dir.path().join("mcppol.lock");
    std::fs::write(&lock_path, lock).unwrap();
    let (code, out, err) = run(&[
        "table",
        "--policy",
        policy.to_str().unwrap(),
        "--tools",
        listing.to_str().unwrap(),
        "--lock",
        lock_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let want = "\
TOOL             LOCK      WITH APPROVER    NO APPROVER
gh/get_user      approved  allow allow:0    allow allow:0
gh/create_issue  approved  depends on taint
  when reviewed            ask   reviewed   deny  reviewed
  otherwise                allow allow:0    allow allow:0
gh/push          approved  depends on args.force, principal
  when deny:0              deny  deny:0     deny  deny:0
  when force               deny  force      deny  force
  otherwise                ask   (default)  deny  (default)

policy `p` (";
    assert!(out.starts_with(want), "{out}");
    assert!(
        out.contains("3 tool(s), 2 depending on what the call says"),
        "{out}"
    );
    assert!(
        out.trim_end().ends_with("`otherwise` when none does."),
        "{out}"
    );
}

#[test]
fn table_needs_a_server_for_a_bare_listing() {
    let (code, out, err) = run(&[
        "table",
        "--policy",
        "policies/filesystem.mcppol",
        "--tools",
        FS_TOOLS,
    ]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("names no server"), "{err}");
}

#[test]
fn lock_writes_and_checks_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let (code, lock, _) = run(&["lock", "--tools", FS_TOOLS, "--server", "fs"]);
    assert_eq!(code, 0);
    let parsed = mcppol::Lock::parse(&lock).unwrap();
    assert_eq!(parsed.tools.len(), 14);
    let lock_path = dir.path().join("mcppol.lock");
    std::fs::write(&lock_path, &lock).unwrap();

    let (code, out, _) = run(&[
        "lock",
        "--check",
        "--lock",
        lock_path.to_str().unwrap(),
        "--tools",
        FS_TOOLS,
        "--server",
        "fs",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("0 changed, 0 appeared, 0 vanished, 14 unchanged"),
        "{out}"
    );

    let mut listing: Value =
        serde_json::from_str(&std::fs::read_to_string(FS_TOOLS).unwrap()).unwrap();
    let tools = match listing.get_mut("tools") {
        Some(t) => t.as_array_mut().unwrap(),
        None => listing.as_array_mut().unwrap(),
    };
    let desc = tools[0]["description"].as_str().unwrap().to_string();
    tools[0]["description"] = Value::from(desc + " ");
    let gone = tools.remove(1)["name"].as_str().unwrap().to_string();
    tools.push(serde_json::json!({"name": "exfiltrate"}));
    let first = tools[0]["name"].as_str().unwrap().to_string();
    let changed = dir.path().join("changed.json");
    std::fs::write(&changed, serde_json::json!({"fs": listing}).to_string()).unwrap();
    let (code, out, _) = run(&[
        "lock",
        "--check",
        "--lock",
        lock_path.to_str().unwrap(),
        "--tools",
        changed.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changed"], serde_json::json!([format!("fs/{first}")]));
    assert_eq!(v["appeared"], serde_json::json!(["fs/exfiltrate"]));
    assert_eq!(v["vanished"], serde_json::json!([format!("fs/{gone}")]));
}

#[test]
fn fmt_check_names_files_that_would_change_and_fmt_fixes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, "policy p{deny \"a/b\" ; # why\n}\n").unwrap();
    let (code, out, _) = run(&["fmt", "--check", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("would reformat") && out.contains("p.mcppol"),
        "{out}"
    );
    let (code, _, err) = run(&["fmt", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "policy p {\n  deny \"a/b\"  # why\n}\n"
    );
    let (code, out, _) = run(&["fmt", "--check", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["changed"], serde_json::json!([]));
    let (code, _, _) = run(&["fmt", "--check", "policies/"]);
    assert_eq!(code, 0);
}

#[test]
fn fmt_check_diff_prints_a_unified_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    let text = "policy p {\n  deny   \"a/b\"\n  allow \"c/d\"\n  ask \"e/f\"\n  ask \"g/h\"\n  ask \"i/j\"\n  deny \"k/l\" ;\n}\n";
    std::fs::write(&path, text).unwrap();
    let name = path.to_str().unwrap();
    let (code, out, err) = run(&["fmt", "--check", "--diff", name]);
    assert_eq!(code, 1, "{err}");
    // One hunk: the two changes are within twice the context (3 lines) of
    // each other, as `diff -u` joins them.
    assert_eq!(
        out,
        format!(
            "--- {name}\n+++ {name}\n@@ -1,8 +1,8 @@\n policy p {{\n-  deny   \"a/b\"\n+  deny \"a/b\"\n   allow \"c/d\"\n   ask \"e/f\"\n   ask \"g/h\"\n   ask \"i/j\"\n-  deny \"k/l\" ;\n+  deny \"k/l\"\n }}\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let (code, out, _) = run(&["fmt", "--check", "--diff", "--format", "json", name]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["diffs"][0]
            .as_str()
            .unwrap()
            .contains("-  deny \"k/l\" ;\n"),
        "{v}"
    );
    // Formatted files give no diff; `--diff` alone is a usage error.
    let (code, out, _) = run(&["fmt", "--check", "--diff", "policies/"]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, _, _) = run(&["fmt", "--diff", name]);
    assert_eq!(code, 2);
}

#[test]
fn fmt_leaves_a_file_with_syntax_errors_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.mcppol");
    let text = "policy p {\n  deny \"a\" \"b\"\n}\n";
    std::fs::write(&path, text).unwrap();
    let (code, _, err) = run(&["fmt", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("syntax errors"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn test_cases_state_every_eval_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("multi.mcppol"),
        r#"policy other { allow * }
policy main {
  default deny
  scope tools, resources, prompts
  allow budget: "search/query" when host.within_budget
  allow admins: "ops/*" when assigns.role == "admin" and principal == "dana"
  allow ro: "fs/read" when annotation.read_only
  deny taint: "mail/send" when tainted
  allow "mail/send"
  allow prompt "docs/p"
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("read.json"),
        r#"{"name": "read", "annotations": {"readOnlyHint": true}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lock.json"),
        r#"{"version": 1, "tools": {}}"#,
    )
    .unwrap();
    let tests = dir.path().join("cases.mcppoltest");
    std::fs::write(
        &tests,
        r#"policy multi.mcppol
name main

case a host predicate's value
  tool search/query
  host within_budget=true
  expect allow rule_id=budget
case a failing host predicate never allows
  tool search/query
  host within_budget=error
  expect deny source=default
case principal and assigns
  tool ops/restart
  principal dana
  assigns {"role": "admin"}
  expect allow rule_id=admins
case annotations believed only for a trusted server
  tool fs/read
  tool_def @read.json
  expect deny source=default
case ... which the host may say it trusts
  tool fs/read
  tool_def @read.json
  trust_server
  expect allow rule_id=ro
case a lock file makes the tool new: an exact allow still applies
  tool mail/send
  tool_def {"name": "send"}
  lock @lock.json
  expect allow rule_id=allow:3
case taint
  tool mail/send
  taint web
  expect deny source=deny reason=deny_rule rule_id=taint
case a prompt
  prompt docs/p
  expect allow rule_id=allow:4
case another policy of the file
  name other
  tool x/y
  args {"k": null}
  expect allow rule_id=allow:0
"#,
    )
    .unwrap();
    let (code, out, err) = run(&["test", "--coverage", tests.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("9 case(s), 9 passed, 0 failed"), "{out}");
}

#[test]
fn explain_names_the_visibility_pattern() {
    let (_, out, _) = run(&[
        "explain",
        "--policy",
        "policies/github.mcppol",
        "--tool",
        "github/List-Secret-Alerts",
    ]);
    assert!(
        out.starts_with("policies/github.mcppol:18:13: visibility: decided: `github/List-Secret-Alerts` is hidden: excluded by \"github/*secret*\""),
        "{out}"
    );
    assert!(out.contains("decision: deny (source: visibility, reason: hidden, rule_id: null)"));
}

#[test]
fn fmt_filters_standard_input() {
    let out = mcppol()
        .args(["fmt", "-"])
        .write_stdin("policy p{allow \"a/b\";}")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "policy p {\n  allow \"a/b\"\n}\n"
    );
}

/// The tables of the bundled policies against their servers' listings, as
/// reviewed: what each tool comes to, and on what it depends.
#[test]
fn the_bundled_policies_tables_are_as_reviewed() {
    for (policy, tools) in [
        ("filesystem", format!("fs={FS_TOOLS}")),
        (
            "github",
            "github=docs/examples/github.tools.json".to_string(),
        ),
    ] {
        let (code, out, err) = run(&[
            "table",
            "--policy",
            &format!("policies/{policy}.mcppol"),
            "--tools",
            &tools,
        ]);
        assert_eq!(code, 0, "{err}");
        insta::assert_snapshot!(format!("table_{policy}"), out);
    }
}
