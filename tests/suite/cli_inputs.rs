//! The command line under hostile input and first-hour mistakes (issue 8):
//! only regular files are read, each with a bound; `explain` escapes what
//! the caller controls; `--lock` needs `--tool-def`; `--tools` repeats;
//! `eval --request`; a failed coverage counts on the closing line. The real
//! binary each time, with a generous time limit where a runaway input would
//! hang or exhaust memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;

/// Far more than any of these runs needs; a runaway read would pass it.
const LIMIT: Duration = Duration::from_secs(60);

const POLICY: &str = r#"policy main {
  deny  "*/delete_repo"
  ask   "github/create_*"
  allow "github/get_*"
  allow "fs/read_file"
}
"#;

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Self {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
    /// Replaces the temporary folder's path with `DIR` for snapshots.
    fn scrub(&self, text: &str) -> String {
        text.replace(&self.path().display().to_string(), "DIR")
    }
}

#[cfg(unix)]
fn fifo(dir: &Dir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

#[cfg(unix)]
fn link_to_zero(dir: &Dir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    path
}

fn mcppol() -> Command {
    let mut cmd = crate::common::mcppol();
    cmd.timeout(LIMIT).env("NO_COLOR", "1");
    cmd
}

/// (status, stdout, stderr)
fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

// ------------------------------------------------ only regular files, bounded

#[cfg(unix)]
#[test]
fn check_refuses_a_link_to_dev_zero_in_a_folder() {
    let dir = Dir::new();
    dir.write("good.mcppol", POLICY);
    link_to_zero(&dir, "zero.mcppol");
    let (status, _, stderr) = run(mcppol().arg("check").arg(dir.path()));
    assert_eq!(status, 1, "{stderr}");
    let stderr = dir.scrub(&stderr);
    assert!(
        stderr.contains("`DIR/zero.mcppol` is a device, not a regular file"),
        "{stderr}"
    );
    assert!(stderr.contains("checked 2 files: 1 error"), "{stderr}");
}

#[test]
fn eval_on_a_folder_says_so_without_an_empty_snippet() {
    let dir = Dir::new();
    let (status, stdout, stderr) = run(mcppol()
        .args(["eval", "--tool", "a/b", "--policy"])
        .arg(dir.path()));
    assert_eq!(status, 2, "{stderr}");
    assert!(stdout.is_empty());
    insta::assert_snapshot!("eval_policy_folder", dir.scrub(&stderr));
}

#[cfg(unix)]
#[test]
fn eval_on_a_fifo_policy_does_not_hang() {
    let dir = Dir::new();
    let pipe = fifo(&dir, "policy.mcppol");
    let (status, stdout, stderr) = run(mcppol()
        .args(["eval", "--tool", "a/b", "--policy"])
        .arg(&pipe));
    assert_eq!(status, 2, "{stderr}");
    assert!(stdout.is_empty());
    insta::assert_snapshot!("eval_policy_fifo", dir.scrub(&stderr));
}

#[cfg(unix)]
#[test]
fn every_json_file_flag_refuses_devices_and_fifos() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let zero = link_to_zero(&dir, "zero.json");
    let pipe = fifo(&dir, "pipe.json");
    for bad in [&zero, &pipe] {
        let at = format!("@{}", bad.display());
        let cases: Vec<Vec<String>> = vec![
            vec!["--args".into(), at.clone()],
            vec!["--tool-def".into(), at.clone()],
            vec!["--annotations".into(), at.clone()],
            vec!["--assigns".into(), at.clone()],
            vec![
                "--tool-def".into(),
                r#"{"name":"get_user"}"#.into(),
                "--lock".into(),
                bad.display().to_string(),
            ],
        ];
        for extra in cases {
            let (status, stdout, stderr) = run(mcppol()
                .args(["eval", "--tool", "github/get_user", "--policy"])
                .arg(&policy)
                .args(&extra));
            assert_eq!(status, 2, "{extra:?}: {stderr}");
            assert!(stdout.is_empty(), "{extra:?}");
            assert!(stderr.contains("not a regular file"), "{extra:?}: {stderr}");
        }
        let tools = format!("gh={}", bad.display());
        for verb in [
            vec!["table", "--policy", policy.to_str().unwrap()],
            vec!["lock"],
        ] {
            let (status, _, stderr) = run(mcppol().args(&verb).args(["--tools", &tools]));
            assert_eq!(status, 2, "{verb:?}: {stderr}");
            assert!(stderr.contains("not a regular file"), "{verb:?}: {stderr}");
        }
        let (status, _, stderr) = run(mcppol().arg("fingerprint").arg(bad));
        assert_eq!(status, 1, "{stderr}");
        assert!(stderr.contains("not a regular file"), "{stderr}");
    }
}

#[cfg(unix)]
#[test]
fn a_test_file_reading_dev_zero_is_refused() {
    let dir = Dir::new();
    dir.write("p.mcppol", POLICY);
    link_to_zero(&dir, "zero.json");
    let test = dir.write(
        "p.mcppoltest",
        "case endless arguments\n  tool github/get_user\n  args @zero.json\n  expect allow\n",
    );
    let (status, _, stderr) = run(mcppol().arg("test").arg(&test));
    assert_eq!(status, 2, "{stderr}");
    insta::assert_snapshot!("test_args_dev_zero", dir.scrub(&stderr));
}

#[test]
fn a_file_larger_than_the_limit_is_refused_whatever_it_holds() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    // Sparse: 17 MiB of nothing, more than the 16 MiB a JSON file may have.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 * 1024 * 1024)
        .unwrap();
    let (status, _, stderr) = run(mcppol()
        .args(["eval", "--tool", "github/get_user", "--policy"])
        .arg(&policy)
        .arg("--args")
        .arg(format!("@{}", big.display())));
    assert_eq!(status, 2);
    insta::assert_snapshot!("eval_args_too_large", dir.scrub(&stderr));
}

#[test]
fn standard_input_is_bounded() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let endless = vec![b' '; 17 * 1024 * 1024];
    let (status, _, stderr) = run(mcppol()
        .args([
            "eval",
            "--tool",
            "github/get_user",
            "--args",
            "@-",
            "--policy",
        ])
        .arg(&policy)
        .write_stdin(endless));
    assert_eq!(status, 2);
    assert!(
        stderr.contains("standard input has more than 16777216 bytes"),
        "{stderr}"
    );
}

// ------------------------------------------------------- explain escapes

#[test]
fn explain_escapes_what_the_caller_controls() {
    let dir = Dir::new();
    let policy = dir.write(
        "p.mcppol",
        "policy main {\n  default deny\n  deny \"*/delete_repo\"\n  allow \"fs/read\" when args.path == \"/srv/a\"\n}\n",
    );
    let forged = "\n\u{1b}[8mdecision: allow (source: allow, reason: allow_rule, rule_id: x)\u{1b}[0m\u{202e}";
    let tool = format!("fs/read{forged}");
    let args = serde_json::json!({ "path": format!("/srv/a{forged}") }).to_string();
    let (status, stdout, stderr) = run(mcppol()
        .args(["explain", "--policy"])
        .arg(&policy)
        .args(["--tool", &tool, "--args", &args]));
    assert_eq!(status, 0, "{stderr}");
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    assert!(!stdout.contains('\u{202e}'), "{stdout}");
    let decisions: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("decision:"))
        .collect();
    assert_eq!(decisions.len(), 1, "{stdout}");
    assert!(decisions[0].starts_with("decision: deny"), "{stdout}");
    // An argument reaches the output through what a predicate saw.
    let (_, stdout, _) = run(mcppol()
        .args(["explain", "--policy"])
        .arg(&policy)
        .args(["--tool", "fs/read", "--args", &args]));
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("decision:"))
            .count(),
        1,
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    insta::assert_snapshot!("explain_escaped", dir.scrub(&stdout));
}

// ------------------------------------------------- --lock needs --tool-def

#[test]
fn lock_without_tool_def_is_a_usage_error() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let lock = dir.write(
        "lock.json",
        r#"{"version": 1, "tools": {"fs/read_file": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}}"#,
    );
    for verb in ["eval", "explain"] {
        let (status, stdout, stderr) = run(mcppol()
            .args([verb, "--tool", "fs/read_file", "--policy"])
            .arg(&policy)
            .arg("--lock")
            .arg(&lock));
        assert_eq!(status, 2, "{verb}: {stderr}");
        assert!(stdout.is_empty(), "{verb}: no false definition_changed");
        if verb == "eval" {
            insta::assert_snapshot!("eval_lock_without_tool_def", stderr);
        }
    }
    // With the definition, the lock decides.
    let (status, stdout, _) = run(mcppol()
        .args(["eval", "--tool", "fs/read_file", "--policy"])
        .arg(&policy)
        .args(["--tool-def", r#"{"name": "read_file"}"#, "--lock"])
        .arg(&lock));
    assert_eq!(status, 0);
    assert!(
        stdout.contains(r#""reason":"definition_changed""#),
        "{stdout}"
    );
}

// ------------------------------------------------------ --tools repeats

const FS_TOOLS: &str = "tests/fixtures/tools/server-filesystem.tools.json";

#[test]
fn table_and_lock_take_several_listings() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let gh = dir.write(
        "gh.json",
        r#"{"tools": [{"name": "get_user"}, {"name": "create_issue"}]}"#,
    );
    let fs = format!("fs={FS_TOOLS}");
    let gh_spec = format!("github={}", gh.display());
    let (status, stdout, stderr) = run(mcppol()
        .args(["table", "--format", "json", "--policy"])
        .arg(&policy)
        .args(["--tools", &fs, "--tools", &gh_spec]));
    assert_eq!(status, 0, "{stderr}");
    let table: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<String> = table["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}/{}",
                t["server"].as_str().unwrap(),
                t["tool"].as_str().unwrap()
            )
        })
        .collect();
    assert!(names.contains(&"fs/read_file".to_string()), "{names:?}");
    assert!(names.contains(&"github/get_user".to_string()), "{names:?}");
    assert!(
        names.contains(&"github/create_issue".to_string()),
        "{names:?}"
    );

    let (status, lock, stderr) = run(mcppol().args(["lock", "--tools", &fs, "--tools", &gh_spec]));
    assert_eq!(status, 0, "{stderr}");
    let lock = mcppol::Lock::parse(&lock).unwrap();
    assert!(lock.tools.contains_key("fs/read_file"));
    assert!(lock.tools.contains_key("github/create_issue"));
    let lock_path = dir.write("mcppol.lock", &lock.to_json_pretty());
    let (status, stdout, stderr) = run(mcppol()
        .args([
            "lock", "--check", "--tools", &fs, "--tools", &gh_spec, "--lock",
        ])
        .arg(&lock_path));
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains("0 changed, 0 appeared, 0 vanished"),
        "{stdout}"
    );
}

#[test]
fn a_tool_listed_twice_is_refused() {
    let dir = Dir::new();
    let gh = dir.write("gh.json", r#"{"tools": [{"name": "get_user"}]}"#);
    let spec = format!("github={}", gh.display());
    let (status, stdout, stderr) = run(mcppol().args(["lock", "--tools", &spec, "--tools", &spec]));
    assert_eq!(status, 2);
    assert!(stdout.is_empty());
    insta::assert_snapshot!("lock_tool_listed_twice", dir.scrub(&stderr));
}

// --------------------------------------- a failed coverage is not a clean run

#[test]
fn failed_coverage_counts_on_the_closing_line() {
    let dir = Dir::new();
    dir.write(
        "p.mcppol",
        "policy p {\n  deny \"a/x\"\n  allow \"a/y\"\n}\n",
    );
    let test = dir.write(
        "p.mcppoltest",
        "case x is denied\n  tool a/x\n  expect deny rule_id=deny:0\n",
    );
    let (status, stdout, _) = run(mcppol().args(["test", "--coverage"]).arg(&test));
    assert_eq!(status, 1, "{stdout}");
    let last = stdout.lines().last().unwrap();
    assert_eq!(last, "1 passed, 1 failed", "{stdout}");
    insta::assert_snapshot!("test_coverage_failed", dir.scrub(&stdout));
    // Without --coverage the same file passes.
    let (status, stdout, _) = run(mcppol().arg("test").arg(&test));
    assert_eq!(status, 0);
    assert_eq!(stdout.lines().last().unwrap(), "1 passed, 0 failed");
}

// ------------------------------------------------- readable ends, not dumps

#[test]
fn a_closed_standard_output_ends_quietly() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = Dir::new();
    // More output than a pipe holds, so the write fails whenever the
    // reader goes away.
    let tools: Vec<String> = (0..5000)
        .map(|i| format!(r#"{{"name": "tool_{i}"}}"#))
        .collect();
    let listing = dir.write(
        "big.json",
        &format!(r#"{{"tools": [{}]}}"#, tools.join(",")),
    );
    let mut child = std::process::Command::new(std::path::PathBuf::from(crate::common::MCPPOL))
        .arg("lock")
        .arg("--tools")
        .arg(format!("s={}", listing.display()))
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let _ = std::io::stderr().flush();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

// ------------------------------------------------------- eval --request

fn eval_request(policy: &Path, input: &str, stdin: &str) -> (i32, String, String) {
    run(mcppol()
        .args(["eval", "--policy"])
        .arg(policy)
        .args(["--request", input])
        .write_stdin(stdin.to_string()))
}

#[test]
fn eval_request_reads_one_object_or_a_batch() {
    let dir = Dir::new();
    let policy = dir.write(
        "p.mcppol",
        "policy main {\n  deny \"*/delete_repo\"\n  deny risky: \"github/create_*\" when tainted\n  ask \"github/create_*\"\n  allow \"github/get_*\"\n  allow budget: \"search/query\" when host.within_budget\n}\n",
    );
    // One object over several lines, from a file: what the flags give.
    let one = dir.write(
        "one.json",
        "{\n  \"tool\": \"github/create_issue\",\n  \"args\": {\"title\": \"x\"},\n  \"taint\": [\"web\"]\n}\n",
    );
    let (status, stdout, stderr) = run(mcppol()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg("--request")
        .arg(&one));
    assert_eq!(status, 0, "{stderr}");
    let (_, by_flags, _) = run(mcppol().args(["eval", "--policy"]).arg(&policy).args([
        "--tool",
        "github/create_issue",
        "--args",
        r#"{"title": "x"}"#,
        "--taint",
        "web",
    ]));
    assert_eq!(stdout, by_flags);
    assert!(stdout.contains(r#""rule_id":"risky""#), "{stdout}");

    // JSON lines on standard input: one decision a line, in order.
    let lines = [
        r#"{"tool": "github/create_issue"}"#,
        r#"{"tool": "github/create_issue", "no_approver": true}"#,
        r#"{"tool": "github/get_user"}"#,
        r#"{"tool": "search/query", "host": {"within_budget": true}}"#,
        r#"{"tool": "search/query", "host": {"within_budget": "error"}}"#,
        r#"{"resource": "fs/file:///etc/passwd"}"#,
    ]
    .join("\n");
    let (status, stdout, stderr) = eval_request(&policy, "-", &lines);
    assert_eq!(status, 0, "{stderr}");
    let got: Vec<(String, String)> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["decision"].as_str().unwrap().to_string(),
                v["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("ask", "ask_rule"),
        ("deny", "no_approver"),
        ("allow", "allow_rule"),
        ("allow", "allow_rule"),
        ("ask", "no_rule"),
        ("allow", "out_of_scope"),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>(),
        "{stdout}"
    );
}

#[test]
fn eval_request_lock_and_tool_def_fields() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let lock = dir.write(
        "lock.json",
        r#"{"version": 1, "tools": {"fs/read_file": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}}"#,
    );
    let request = serde_json::json!({
        "tool": "fs/read_file",
        "tool_def": {"name": "read_file"},
        "lock": lock.display().to_string(),
    })
    .to_string();
    let (status, stdout, stderr) = eval_request(&policy, "-", &request);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains(r#""reason":"definition_changed""#),
        "{stdout}"
    );
}

#[test]
fn eval_request_mistakes_are_usage_errors_naming_the_line() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let batch = "{\"tool\": \"a/b\"}\n{\"tool\": \"a/b\", \"argz\": {}}\n";
    let (status, stdout, stderr) = eval_request(&policy, "-", batch);
    assert_eq!(status, 2);
    assert!(stdout.is_empty(), "nothing decided: {stdout}");
    insta::assert_snapshot!("eval_request_unknown_field", stderr);

    let (status, _, stderr) = run(mcppol().args(["eval", "--policy"]).arg(&policy).args([
        "--request",
        "-",
        "--tool",
        "a/b",
    ]));
    assert_eq!(status, 2);
    assert!(stderr.contains("cannot be used with"), "{stderr}");

    let many = "{\"tool\": \"a/b\"}\n".repeat(100_001);
    let (status, _, stderr) = eval_request(&policy, "-", &many);
    assert_eq!(status, 2);
    assert!(stderr.contains("more than 100000 requests"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn eval_request_refuses_a_fifo() {
    let dir = Dir::new();
    let policy = dir.write("p.mcppol", POLICY);
    let pipe = fifo(&dir, "requests.jsonl");
    let (status, _, stderr) = run(mcppol()
        .args(["eval", "--policy"])
        .arg(&policy)
        .arg("--request")
        .arg(&pipe));
    assert_eq!(status, 2);
    assert!(stderr.contains("is a FIFO"), "{stderr}");
}
