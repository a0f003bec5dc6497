//! The checker's lints: for each lint, `tests/fixtures/lint/NAME/fires.mcppol`
//! raises it (the rendered warnings are snapshots) and `silent.mcppol`, the
//! nearest correct policy, raises nothing at all. Then `mcppol check` itself:
//! silencing comments, `--deny-warnings`, `--tools`, JSON and SARIF output,
//! exit statuses, and the bundled policies passing with warnings denied.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::common::mcppol;
use mcppol::{check_text, render_all, Diagnostic, LintOptions, Listing, LoadOptions, LINTS};
use serde_json::Value;

const FS_TOOLS: &str = "tests/fixtures/tools/server-filesystem.tools.json";

/// Lints that need a tool listing; their fixtures are checked against the
/// filesystem server's listing under the id `fs`.
const TOOL_AWARE: &[&str] = &[
    "unknown_tool",
    "unknown_argument",
    "argument_type",
    "path_not_string",
    "missed_path_argument",
    "unmatched_tools_entry",
];

fn fs_listing() -> Listing {
    let mut listing = Listing::default();
    listing.add_spec(&format!("fs={FS_TOOLS}"), None).unwrap();
    listing
}

fn check_fixture(name: &str, which: &str) -> Vec<Diagnostic> {
    let path = format!("tests/fixtures/lint/{name}/{which}.mcppol");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let options = LintOptions {
        tools: TOOL_AWARE.contains(&name).then(fs_listing),
    };
    check_text(&path, &text, &LoadOptions::default(), &options)
}

#[test]
fn every_lint_has_fixtures() {
    for lint in LINTS {
        for which in ["fires", "silent"] {
            let path = format!("tests/fixtures/lint/{}/{which}.mcppol", lint.name);
            assert!(Path::new(&path).exists(), "missing {path}");
        }
        assert_eq!(lint.code, format!("mcppol::lint::{}", lint.name));
    }
}

#[test]
fn each_lint_fires_on_its_fixture() {
    for lint in LINTS {
        let diagnostics = check_fixture(lint.name, "fires");
        assert!(
            diagnostics.iter().any(|d| d.code == lint.code),
            "{} does not fire on its fixture: {:?}",
            lint.name,
            diagnostics.iter().map(|d| d.code).collect::<Vec<_>>()
        );
        for d in &diagnostics {
            assert_eq!(d.severity, mcppol::Severity::Warning, "{}", d.message);
            assert!(
                d.help.is_some(),
                "{}: `{}` has no help",
                lint.name,
                d.message
            );
            assert!(
                !d.label.is_empty(),
                "{}: `{}` has no label",
                lint.name,
                d.message
            );
            assert!(
                !d.span.is_empty(),
                "{}: `{}` has an empty span",
                lint.name,
                d.message
            );
        }
        insta::assert_snapshot!(
            format!("{}_fires", lint.name),
            render_all(&diagnostics, false)
        );
    }
}

#[test]
fn each_lint_is_silent_on_the_nearest_correct_policy() {
    for lint in LINTS {
        let diagnostics = check_fixture(lint.name, "silent");
        assert!(
            diagnostics.is_empty(),
            "{}/silent.mcppol:\n{}",
            lint.name,
            render_all(&diagnostics, false)
        );
    }
}

fn lint(text: &str) -> Vec<&'static str> {
    check_text(
        "t.mcppol",
        text,
        &LoadOptions::default(),
        &LintOptions::default(),
    )
    .iter()
    .map(|d| d.code)
    .collect()
}

#[test]
fn silencing_by_line_trailing_and_policy() {
    // Own line before the rule, and the end of the rule's last line.
    let text = r#"policy p {
  default deny
  # mcppol: allow(inexact_allow) approved reads only
  allow "fs/read_*"
  allow "fs/list_*",
    "fs/get_*" # mcppol: allow(inexact_allow) same
  allow "fs/search_*"
}"#;
    assert_eq!(lint(text), ["mcppol::lint::inexact_allow"]);
    // Between `policy p {` and the first item: the whole policy.
    let text = r#"policy p { # mcppol: allow(inexact_allow)
  allow "fs/read_*"
  allow "fs/list_*"
}
policy q {
  # mcppol: allow(inexact_allow, shadowed_allow) this one too
  deny "*/x"
  allow "fs/read_*"
  allow "a/x"
}
policy r {
  allow "fs/read_*"
}"#;
    let codes = lint(text);
    assert_eq!(codes, ["mcppol::lint::inexact_allow"]);
    // A directive silences only the lints it names.
    let text =
        "policy p {\n  deny \"*/x\"\n  allow \"a/*\", \"a/x\" # mcppol: allow(inexact_allow)\n}";
    assert_eq!(lint(text), ["mcppol::lint::shadowed_allow"]);
}

#[test]
fn shadowing_is_only_reported_when_certain() {
    let shadowed = |text: &str| {
        lint(text)
            .iter()
            .filter(|c| c.starts_with("mcppol::lint::shadowed"))
            .count()
    };
    // Wider deny, loose: case and punctuation do not count.
    assert_eq!(
        shadowed("policy p { deny \"*/delete_repo\"\n allow \"github/Delete.Repo\" }"),
        1
    );
    assert_eq!(
        shadowed(
            "policy p { deny \"github/*\"\n allow \"github/get_me\" when principal == \"a\" }"
        ),
        1
    );
    assert_eq!(shadowed("policy p { deny * \n allow \"x\" ~ /y/ }"), 1);
    assert_eq!(
        shadowed("policy p { deny \"git\" ~ /^push/ \n allow \"git/Push_files\" }"),
        1
    );
    // A conditional deny, a narrower deny, another kind: no.
    assert_eq!(
        shadowed("policy p { deny \"github/*\" when tainted\n allow \"github/get_me\" }"),
        0
    );
    assert_eq!(
        shadowed("policy p { deny \"github/get_me\"\n allow \"github/get_*\" }"),
        0
    );
    assert_eq!(
        shadowed("policy p { scope tools, resources\n deny *\n allow resource \"docs/*\" }"),
        0
    );
    // A deny never shadows another deny; ask under ask neither.
    assert_eq!(shadowed("policy p { deny \"a/*\"\n deny \"a/b\" }"), 0);
}

#[test]
fn allow_new_tools_on_needs_no_exact_targets() {
    assert!(lint("policy p { allow_new_tools on\n allow \"fs/*\" }").is_empty());
    assert!(lint("policy p { scope tools, resources\n allow resource \"docs/*\" }").is_empty());
}

// ------------------------------------------------------------- the binary

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn bundled_policies_pass_with_warnings_denied() {
    let out = mcppol()
        .args(["check", "--deny-warnings", "policies/"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("0 errors, 0 warnings"), "{stderr}");
    // With the filesystem server's real listing as well.
    let out = mcppol()
        .args(["check", "--deny-warnings", "--tools"])
        .arg(format!("fs={FS_TOOLS}"))
        .arg("policies/filesystem.mcppol")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn warnings_pass_unless_denied() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "w.mcppol", "policy p {\n  allow \"fs/*\"\n}\n");
    let out = mcppol().args(["check", &file]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mcppol::lint::inexact_allow"), "{stderr}");
    assert!(stderr.contains("1 warning"), "{stderr}");
    let out = mcppol()
        .args(["check", "--deny-warnings", &file])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 warning (denied by --deny-warnings)"),
        "{stderr}"
    );
    // Errors stop the lints: a file that does not compile gets no warnings.
    let bad = write(
        &dir,
        "e.mcppol",
        "policy p {\n  allow \"fs/*\" when nope.x\n}\n",
    );
    let out = mcppol()
        .args(["check", "--format", "json", &bad])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("mcppol::lint::"), "{stdout}");
}

#[test]
fn json_lines_keep_the_contract_fields() {
    let out = mcppol()
        .args([
            "check",
            "--format",
            "json",
            "tests/fixtures/lint/shadowed_ask/fires.mcppol",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    let d = &lines[0];
    assert_eq!(d["file"], "tests/fixtures/lint/shadowed_ask/fires.mcppol");
    assert_eq!(d["line"], 3);
    assert_eq!(d["column"], 3);
    assert_eq!(d["severity"], "warning");
    assert_eq!(d["code"], "mcppol::lint::shadowed_ask");
    assert!(d["message"].as_str().unwrap().contains("never decide"));
}

/// The parts of the SARIF 2.1.0 schema a code-scanning UI needs, checked
/// by hand: version, one run with a named driver, rules with ids, and
/// results that name a rule and point at a file region.
fn assert_sarif_shape(log: &Value) {
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().unwrap().contains("sarif"));
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["tool"]["driver"]["name"], "mcppol");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for result in run["results"].as_array().unwrap() {
        let id = result["ruleId"].as_str().unwrap();
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(ids[index], id);
        assert!(["error", "warning", "note", "none"].contains(&result["level"].as_str().unwrap()));
        assert!(!result["message"]["text"].as_str().unwrap().is_empty());
        let location = &result["locations"][0]["physicalLocation"];
        assert!(location["artifactLocation"]["uri"].is_string());
        let region = &location["region"];
        for key in ["startLine", "startColumn", "endLine", "endColumn"] {
            assert!(region[key].as_u64().unwrap() >= 1, "{key}");
        }
        assert!(region["endLine"].as_u64() >= region["startLine"].as_u64());
    }
}

#[test]
fn sarif_is_one_log_for_all_files() {
    let out = mcppol()
        .args([
            "check",
            "--format",
            "sarif",
            "--tools",
            &format!("fs={FS_TOOLS}"),
            "tests/fixtures/lint/unknown_tool/fires.mcppol",
            "tests/fixtures/lint/folded_regex/fires.mcppol",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_sarif_shape(&log);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 9);
    let first = &results[0];
    assert_eq!(first["ruleId"], "mcppol::lint::unknown_tool");
    assert_eq!(
        first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "tests/fixtures/lint/unknown_tool/fires.mcppol"
    );
    assert_eq!(
        first["locations"][0]["physicalLocation"]["region"]["startLine"],
        2
    );
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let folded = rules
        .iter()
        .find(|r| r["id"] == "mcppol::lint::folded_regex")
        .unwrap();
    assert!(folded["shortDescription"]["text"].is_string());
    assert!(folded["fullDescription"]["text"]
        .as_str()
        .unwrap()
        .starts_with("A deny or ask regex target"));
    assert!(folded["helpUri"]
        .as_str()
        .unwrap()
        .ends_with("docs/checker.md#folded_regex"));
    // An error's rule is described as well, from the registry.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.mcppol");
    std::fs::write(&bad, "policy p {\n  permit \"a/b\"\n}\n").unwrap();
    let out = mcppol()
        .args(["check", "--format", "sarif"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_sarif_shape(&log);
    let rule = &log["runs"][0]["tool"]["driver"]["rules"][0];
    assert_eq!(rule["id"], "mcppol::compile::unknown_keyword");
    assert!(rule["shortDescription"]["text"]
        .as_str()
        .unwrap()
        .starts_with("A word where"));
    assert!(rule["fullDescription"]["text"]
        .as_str()
        .unwrap()
        .contains("`permit`"));
    assert_eq!(
        rule["help"]["text"],
        "Write `deny`, `ask`, `allow` or `tools`."
    );
    assert!(rule["helpUri"]
        .as_str()
        .unwrap()
        .ends_with("docs/diagnostics.md#mcppol::compile::unknown_keyword"));
    // A clean run is still a valid log, with no results.
    let out = mcppol()
        .args(["check", "--format", "sarif", "policies/strict.mcppol"])
        .output()
        .unwrap();
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_sarif_shape(&log);
    assert_eq!(log["runs"][0]["results"], Value::Array(vec![]));
}

#[test]
fn tool_listings_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(&dir, "p.mcppol", "policy p {\n  ask \"fs/write_fle\"\n}\n");
    let listing = std::fs::read_to_string(FS_TOOLS).unwrap();
    let bare = write(&dir, "bare.json", &listing);
    let result = write(&dir, "result.json", &format!("{{\"tools\": {listing}}}"));
    let map = write(
        &dir,
        "map.json",
        &format!("{{\"fs\": {{\"tools\": {listing}}}}}"),
    );
    let runs: [&[&str]; 4] = [
        &["--tools", &format!("fs={bare}")],
        &["--tools", &result, "--server", "fs"],
        &["--tools", &map],
        &["--tools", &format!("fs={result}")],
    ];
    for flags in runs {
        let out = mcppol()
            .arg("check")
            .args(flags)
            .args(["--format", "json", &policy])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{flags:?}");
        assert!(
            stdout.contains("mcppol::lint::unknown_tool"),
            "{flags:?}: {stdout}"
        );
        assert!(stdout.contains("write_file"), "{flags:?}: {stdout}");
    }
    // A bare listing with no server id, or an unreadable one: usage errors.
    for flags in [
        vec!["--tools".to_string(), bare.clone()],
        vec!["--tools".to_string(), "fs=/nonexistent.json".to_string()],
        vec!["--tools".to_string(), format!("fs={map}")],
    ] {
        let out = mcppol()
            .arg("check")
            .args(&flags)
            .arg(&policy)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--tools"));
    }
}

#[test]
fn usage_errors_exit_2() {
    let out = mcppol()
        .args(["check", "--format", "xml", "policies/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = mcppol()
        .args(["check", "--server", "fs", "policies/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = mcppol().args(["check", "no/such/dir"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// Rule and comment fragments, each valid on its own, that the lints
    /// look at from every side.
    const PIECES: &[&str] = &[
        "deny \"*/delete_repo\"",
        "deny \"git\" ~ /^Push-[A-Z]\\.x/",
        "ask \"github/create_*\" when tainted",
        "allow \"github/Delete-Repo\"",
        "allow \"fs/*\" when annotation.read_only and not tainted",
        "allow \"read_file\" when args.path inside \"rel\"",
        "deny \"fs/*\" when args.paths[0].x escapes \"/srv\" or args.head matches /a/",
        "allow \"fs/read_text_file\" when args.head > 3 and args.tail in [1, \"x\"]",
        "deny \"/x\", \"x/\", \"a//b\"",
        "trusted all",
        "allow_new_tools on",
        "# mcppol: allow(inexact_allow, nope)",
        "# mcppol: allow(",
        "# mcppol:",
        "tools { include \"fs/*\" exclude \"\" }",
        "ask * unless tainted(ignore: [\"fs\"])",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn on_any_mix_of_rules(picks in proptest::collection::vec(0..PIECES.len(), 0..10)) {
            let mut text = String::from("policy p { # mcppol: allow(duplicate_rule)\n");
            for i in picks {
                text.push_str(PIECES[i]);
                text.push('\n');
            }
            text.push('}');
            let options = LintOptions { tools: Some(fs_listing()) };
            let diagnostics = check_text("p.mcppol", &text, &LoadOptions::default(), &options);
            for d in &diagnostics {
                prop_assert!(d.span.end <= text.len());
                prop_assert!(d.span.start <= d.span.end);
            }
            let _ = render_all(&diagnostics, false);
        }
    }
}

#[test]
fn line_break_in_allow_catches_the_shell_rule_claude_code_mcppol_had() {
    // The bundled policy's `allow shell` before issue 22: bash runs each
    // line, and `ls -la⏎curl … | sh` passed it.
    let text = r#"policy p {
  allow shell: "claude/Bash"
    when args.command matches /^(ls|pwd|git (status|diff|log|show|branch)|cargo (build|test|check|clippy|fmt))( [^;&|`$<>()\\]*)?$/
}"#;
    let diagnostics = check_text(
        "t.mcppol",
        text,
        &LoadOptions::default(),
        &LintOptions::default(),
    );
    let d = diagnostics
        .iter()
        .find(|d| d.code == "mcppol::lint::line_break_in_allow")
        .expect("no line_break_in_allow");
    assert_eq!(&text[d.span.start..d.span.end], r"[^;&|`$<>()\\]");
    assert!(d.help.as_deref().unwrap().contains(r"[^;&|`$<>()\\\n\r]"));
    // As it is bundled now: silent.
    let fixed = std::fs::read_to_string("policies/claude-code.mcppol").unwrap();
    assert!(lint(&fixed).is_empty(), "{:?}", lint(&fixed));
}
