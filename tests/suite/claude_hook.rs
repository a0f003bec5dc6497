//! `mcppol claude-hook`: recorded Claude Code hook payloads fed to the real
//! binary, with the exact JSON printed and the exit status checked, for
//! every event, MCP and built-in tools, server names with `__`, missing
//! fields, input that is not JSON, a policy that does not load and an
//! unknown policy name; session taint across processes (50 at once).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use serde_json::{json, Value};

const POLICY: &str = "tests/fixtures/claude/policy.mcppol";
const SESSION: &str = "5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11";

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("tests/fixtures/claude/{name}.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A fixture with some fields replaced (a `null` removes the field).
fn with(name: &str, changes: Value) -> Value {
    let mut v = fixture(name);
    for (k, new) in changes.as_object().unwrap() {
        if new.is_null() {
            v.as_object_mut().unwrap().remove(k);
        } else {
            v[k] = new.clone();
        }
    }
    v
}

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }
}

struct Hook {
    state: tempfile::TempDir,
    policy: String,
    extra: Vec<String>,
    /// Environment changes: a value sets, `None` removes.
    env: Vec<(String, Option<String>)>,
}

impl Hook {
    fn new() -> Self {
        Hook {
            state: tempfile::tempdir().unwrap(),
            policy: POLICY.to_string(),
            extra: vec!["--name".to_string(), "claude".to_string()],
            env: vec![("HOME".to_string(), Some("/home/dev".to_string()))],
        }
    }

    fn env(mut self, key: &str, value: Option<&str>) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.map(str::to_string)));
        self
    }

    /// Without `--name`.
    fn unnamed(mut self) -> Self {
        self.extra.clear();
        self
    }

    fn arg(mut self, a: &str) -> Self {
        self.extra.push(a.to_string());
        self
    }

    fn policy(mut self, p: &str) -> Self {
        self.policy = p.to_string();
        self
    }

    fn state_dir(&self) -> PathBuf {
        self.state.path().join("state")
    }

    fn run_bytes(&self, input: &[u8]) -> Run {
        let mut command = crate::common::mcppol();
        for (k, v) in &self.env {
            match v {
                Some(v) => command.env(k, v),
                None => command.env_remove(k),
            };
        }
        let out = command
            .args(["claude-hook", "--policy", &self.policy])
            .arg("--state-dir")
            .arg(self.state_dir())
            .args(&self.extra)
            .write_stdin(input.to_vec())
            .output()
            .unwrap();
        Run {
            status: out
                .status
                .code()
                .expect("no exit status: killed by a signal"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn run(&self, event: &Value) -> Run {
        self.run_bytes(event.to_string().as_bytes())
    }
}

fn permission(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}

/// Checks a PreToolUse answer exactly: one JSON line, exit status 0.
fn assert_permission(run: &Run, decision: &str, reason: &str) {
    assert_eq!(run.status, 0, "stderr: {}", run.stderr);
    assert_eq!(run.json(), permission(decision, reason));
    assert!(run.stdout.ends_with("}\n") && run.stdout.lines().count() == 1);
    // The same bytes as the JSON printed compactly, keys in this order.
    assert_eq!(
        run.stdout.trim_end(),
        permission(decision, reason).to_string()
    );
}

fn failed(reason: &str) -> String {
    format!("mcppol could not decide this call, so it is denied: {reason}")
}

#[test]
fn builtin_tools_are_tools_of_the_claude_server() {
    let hook = Hook::new();
    assert_permission(
        &hook.run(&fixture("pre_bash")),
        "deny",
        "mcppol: deny claude/Bash by rule `no_rm_rf` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:4:3",
    );
    let ls = with("pre_bash", json!({"tool_input": {"command": "ls -la"}}));
    assert_permission(
        &hook.run(&ls),
        "allow",
        "mcppol: allow claude/Bash by rule `shell` (allow_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:12:3",
    );
    let make = with("pre_bash", json!({"tool_input": {"command": "make"}}));
    assert_permission(
        &hook.run(&make),
        "ask",
        "mcppol: ask claude/Bash by the default (no_rule) of policy `claude` in tests/fixtures/claude/policy.mcppol",
    );
    let env = with(
        "pre_bash",
        json!({"tool_name": "Read", "tool_input": {"file_path": "/home/dev/project/.env"}}),
    );
    assert_permission(
        &hook.run(&env),
        "deny",
        "mcppol: deny claude/Read by rule `no_dotenv` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:6:3",
    );
}

#[test]
fn edits_are_kept_inside_the_sessions_folder() {
    let hook = Hook::new();
    assert_permission(
        &hook.run(&fixture("pre_write")),
        "allow",
        "mcppol: allow claude/Write by rule `edits` (allow_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:10:3",
    );
    let outside = with(
        "pre_write",
        json!({"tool_input": {"file_path": "/home/dev/.bashrc", "content": "x"}}),
    );
    assert_permission(
        &hook.run(&outside),
        "deny",
        "mcppol: deny claude/Write by rule `outside` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:7:3",
    );
    // The same path from another session folder.
    let elsewhere = with("pre_write", json!({"cwd": "/home/dev/other"}));
    assert_eq!(
        hook.run(&elsewhere).json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    // A cwd that is not absolute: `$CWD` is unknown and fails closed.
    let relative = with("pre_write", json!({"cwd": "project"}));
    assert_permission(
        &hook.run(&relative),
        "deny",
        "mcppol: deny claude/Write by rule `outside` (predicate_failed) of policy `claude` at tests/fixtures/claude/policy.mcppol:7:3",
    );
}

#[test]
fn mcp_tools_go_by_server_and_tool() {
    let hook = Hook::new();
    assert_permission(
        &hook.run(&fixture("pre_mcp")),
        "allow",
        "mcppol: allow github/get_issue by rule `allow:3` (allow_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:13:3",
    );
    let create = with("pre_mcp", json!({"tool_name": "mcp__github__create_issue"}));
    assert_permission(
        &hook.run(&create),
        "ask",
        "mcppol: ask github/create_issue by the default (no_rule) of policy `claude` in tests/fixtures/claude/policy.mcppol",
    );
}

#[test]
fn a_server_name_with_double_underscores() {
    let event = with("pre_mcp", json!({"tool_name": "mcp__my__srv__do_it"}));
    // Unresolved: `my/srv__do_it` (denied) and `my__srv/do_it` (allowed)
    // are both decided, and the strictest stands.
    assert_permission(
        &Hook::new().run(&event),
        "deny",
        "mcppol: deny my/srv__do_it by rule `my_tools` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:8:3; `mcp__my__srv__do_it` reads 2 ways (my/srv__do_it, my__srv/do_it) and the strictest decision stands",
    );
    // Resolved by --servers.
    assert_permission(
        &Hook::new().arg("--servers").arg("github,my__srv").run(&event),
        "allow",
        "mcppol: allow my__srv/do_it by rule `allow:3` (allow_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:13:3",
    );
    // A name that gives no server and tool at all.
    let bad = with("pre_mcp", json!({"tool_name": "mcp__github"}));
    assert_permission(
        &Hook::new().run(&bad),
        "deny",
        &failed("`mcp__github` names no MCP server and tool (expected `mcp__SERVER__TOOL`)"),
    );
}

#[test]
fn the_builtin_server_can_be_renamed() {
    let hook = Hook::new().arg("--builtin-server").arg("cc");
    assert_permission(
        &hook.run(&fixture("pre_bash")),
        "ask",
        "mcppol: ask cc/Bash by the default (no_rule) of policy `claude` in tests/fixtures/claude/policy.mcppol",
    );
    let hook = Hook::new().arg("--builtin-server").arg("a/b");
    assert_permission(
        &hook.run(&fixture("pre_bash")),
        "deny",
        &failed("--builtin-server `a/b` is not a server id (it must be non-empty and hold no `/`)"),
    );
}

#[test]
fn missing_fields_deny() {
    let hook = Hook::new();
    for field in ["session_id", "cwd", "tool_name", "tool_input"] {
        let event = with("pre_bash", json!({ field: null }));
        assert_permission(
            &hook.run(&event),
            "deny",
            &failed(&format!("the PreToolUse event has no `{field}`")),
        );
    }
    let event = with("pre_bash", json!({"tool_input": "rm -rf /"}));
    assert_permission(
        &hook.run(&event),
        "deny",
        &failed("the PreToolUse event's `tool_input` is not a JSON object"),
    );
    let event = with("pre_bash", json!({"tool_name": 7}));
    assert_permission(
        &hook.run(&event),
        "deny",
        &failed("the PreToolUse event's `tool_name` is not a string"),
    );
    // A PostToolUse that cannot name its session: Claude is told, exit 0.
    let event = with("post_webfetch", json!({"session_id": null}));
    let run = hook.run(&event);
    assert_eq!(run.status, 0);
    assert_eq!(
        run.json(),
        json!({"decision": "block", "reason": "mcppol could not record this tool's output in the session's taint: the PostToolUse event has no `session_id`"})
    );
    // SessionEnd blocks nothing: the reason goes to stderr, status 2.
    let run = hook.run(&with("session_end", json!({"session_id": null})));
    assert_eq!((run.status, run.stdout.as_str()), (2, ""));
    assert_eq!(
        run.stderr,
        "mcppol claude-hook: the SessionEnd event has no `session_id`\n"
    );
}

#[test]
fn input_that_is_no_known_event_exits_2() {
    let hook = Hook::new();
    let cases: [(&[u8], &str); 6] = [
        (b"{\"hook_event_name\": \"PreToolUse\"", "the hook input is not JSON: EOF while parsing an object at line 1 column 32"),
        (b"", "the hook input is not JSON: EOF while parsing a value at line 1 column 0"),
        (b"[]", "the hook input is not a JSON object"),
        (b"{\"tool_name\": \"Bash\"}", "the hook input has no `hook_event_name`"),
        (b"{\"hook_event_name\": 1}", "the hook input has no `hook_event_name`"),
        (b"{\"hook_event_name\": \"Stop\"}", "`Stop` is not an event mcppol claude-hook handles (PreToolUse, PostToolUse, PostToolUseFailure, SessionEnd); install it with the block that `mcppol claude-hook --print-settings` prints"),
    ];
    for (input, reason) in cases {
        let run = hook.run_bytes(input);
        assert_eq!(run.status, 2, "{input:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(run.stderr, format!("mcppol claude-hook: {reason}\n"));
    }
    let run = hook.run(&fixture("user_prompt"));
    assert_eq!((run.status, run.stdout.as_str()), (2, ""));
    assert!(run.stderr.contains("`UserPromptSubmit` is not an event"));
    // Too large to read.
    let big = format!(
        r#"{{"hook_event_name": "PreToolUse", "pad": "{}"}}"#,
        "x".repeat(16 << 20)
    );
    let run = hook.run_bytes(big.as_bytes());
    assert_eq!(run.status, 2);
    assert_eq!(
        run.stderr,
        "mcppol claude-hook: the hook input is larger than 16 MiB\n"
    );
}

#[test]
fn a_policy_that_does_not_load_denies() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.mcppol");
    std::fs::write(
        &bad,
        "policy p {\n  allow \"claude/Bash\" when args.command insde \"/\"\n}\n",
    )
    .unwrap();
    let bad = bad.display().to_string();
    let run = Hook::new().policy(&bad).unnamed().run(&fixture("pre_bash"));
    assert_permission(
        &run,
        "deny",
        &failed(&format!(
            "the policy file `{bad}` does not load: unknown test `insde` at {bad}:2:41 (run `mcppol check {bad}`)"
        )),
    );
    let missing = dir.path().join("missing.mcppol").display().to_string();
    let run = Hook::new()
        .policy(&missing)
        .unnamed()
        .run(&fixture("pre_bash"));
    assert_permission(
        &run,
        "deny",
        &failed(&format!(
            "the policy does not load: cannot read `{missing}`: No such file or directory (os error 2)"
        )),
    );
    // Recording taint does not need the policy.
    let hook = Hook::new().policy(&missing).unnamed();
    let run = hook.run(&fixture("post_webfetch"));
    assert_eq!((run.status, run.stdout.as_str()), (0, ""));
}

#[test]
fn an_unknown_or_missing_policy_name_denies() {
    let run = Hook::new()
        .unnamed()
        .arg("--name")
        .arg("nope")
        .run(&fixture("pre_bash"));
    assert_permission(
        &run,
        "deny",
        &failed("no policy named `nope`; the file has: claude, other (policy file `tests/fixtures/claude/policy.mcppol`)"),
    );
    // Two policies and no --name.
    let run = Hook::new().unnamed().run(&fixture("pre_write"));
    assert_permission(
        &run,
        "deny",
        &failed("the file holds several policies (claude, other); name one with --name (policy file `tests/fixtures/claude/policy.mcppol`)"),
    );
    let run = Hook::new()
        .unnamed()
        .arg("--name")
        .arg("other")
        .run(&fixture("pre_write"));
    assert_permission(
        &run,
        "deny",
        "mcppol: deny claude/Write by the default (no_rule) of policy `other` in tests/fixtures/claude/policy.mcppol",
    );
}

fn taint_file(state: &Path) -> PathBuf {
    state.join(format!("s-{SESSION}.taint"))
}

#[test]
fn web_and_mcp_output_taint_the_session_until_it_ends() {
    let hook = Hook::new();
    let ls = with("pre_bash", json!({"tool_input": {"command": "ls"}}));
    let mail = with(
        "pre_mcp",
        json!({"tool_name": "mcp__mail__send", "tool_input": {"to": "x@example.com"}}),
    );
    assert_eq!(
        hook.run(&ls).json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    assert_eq!(
        hook.run(&mail).json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );

    // A page fetched from the web taints as `web`.
    let run = hook.run(&fixture("post_webfetch"));
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(
        std::fs::read_to_string(taint_file(&hook.state_dir())).unwrap(),
        "mcppol taint 1\n\"web\"\n"
    );
    assert_permission(
        &hook.run(&ls),
        "deny",
        "mcppol: deny claude/Bash by rule `tainted_shell` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:5:3",
    );
    assert_permission(
        &hook.run(&mail),
        "deny",
        "mcppol: deny mail/send by rule `tainted_mail` (deny_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:9:3",
    );
    // Another session is not tainted.
    let other = with(
        "pre_bash",
        json!({"session_id": "other-session", "tool_input": {"command": "ls"}}),
    );
    assert_eq!(
        hook.run(&other).json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );

    // An MCP tool's output, and a failed MCP call's error text, taint as
    // their servers.
    assert_eq!(hook.run(&fixture("post_mcp")).status, 0);
    assert_eq!(hook.run(&fixture("post_failure_mcp")).status, 0);
    // Built-in tools other than the web ones taint nothing.
    let post_bash = with("post_webfetch", json!({"tool_name": "Bash"}));
    assert_eq!(hook.run(&post_bash).status, 0);
    assert_eq!(
        std::fs::read_to_string(taint_file(&hook.state_dir())).unwrap(),
        "mcppol taint 1\n\"web\"\n\"github\"\n\"wiki\"\n"
    );

    // The session ends: its file is removed and a new session starts clean.
    let run = hook.run(&fixture("session_end"));
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert!(!taint_file(&hook.state_dir()).exists());
    assert_eq!(
        hook.run(&ls).json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
    // Ending it twice is fine.
    assert_eq!(hook.run(&fixture("session_end")).status, 0);
}

#[test]
fn the_tools_own_server_and_ignored_servers_do_not_count() {
    let hook = Hook::new();
    let post_mail = with("post_mcp", json!({"tool_name": "mcp__mail__list"}));
    assert_eq!(hook.run(&post_mail).status, 0);
    let post_docs = with("post_mcp", json!({"tool_name": "mcp__docs__search"}));
    assert_eq!(hook.run(&post_docs).status, 0);
    let mail = with(
        "pre_mcp",
        json!({"tool_name": "mcp__mail__send", "tool_input": {}}),
    );
    assert_permission(
        &hook.run(&mail),
        "allow",
        "mcppol: allow mail/send by rule `allow:3` (allow_rule) of policy `claude` at tests/fixtures/claude/policy.mcppol:13:3",
    );
}

#[test]
fn a_taint_file_that_cannot_be_read_fails_closed() {
    let ls = with("pre_bash", json!({"tool_input": {"command": "ls"}}));
    let expected = |why: &str| {
        format!("mcppol: deny claude/Bash by rule `tainted_shell` (predicate_failed) of policy `claude` at tests/fixtures/claude/policy.mcppol:5:3; the session's taint is unknown, so `tainted` fails closed: {why}")
    };

    // A damaged file.
    let hook = Hook::new();
    std::fs::create_dir_all(hook.state_dir()).unwrap();
    let file = taint_file(&hook.state_dir());
    std::fs::write(&file, "mcppol taint 1\n\"we").unwrap();
    assert_permission(
        &hook.run(&ls),
        "deny",
        &expected(&format!("`{}` ends in a cut line", file.display())),
    );
    // Recording more taint does not repair it.
    let run = hook.run(&fixture("post_mcp"));
    assert_eq!(run.status, 0);
    assert_eq!(
        run.json()["reason"],
        format!(
            "mcppol could not record this tool's output in the session's taint: `{}` ends in a cut line",
            file.display()
        )
    );

    // A file emptied (how a failed append leaves it).
    std::fs::write(&file, "").unwrap();
    assert_permission(
        &hook.run(&ls),
        "deny",
        &expected(&format!(
            "`{}` does not start with its header line (cut short or damaged)",
            file.display()
        )),
    );

    // A state folder that cannot be created (a file stands in its way):
    // nothing can be read or recorded.
    let hook = Hook::new();
    std::fs::write(hook.state_dir(), "not a folder").unwrap();
    let run = hook.run(&ls);
    let reason = run.json()["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    assert!(
        reason.starts_with(&expected(&format!(
            "cannot open `{}/",
            hook.state_dir().display()
        ))),
        "{reason}"
    );
    let run = hook.run(&fixture("post_webfetch"));
    assert_eq!(run.status, 0);
    assert_eq!(run.json()["decision"], "block");

    // A policy that never tests `tainted` does not read the taint at all.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.mcppol");
    std::fs::write(&plain, "policy p {\n  allow \"claude/Bash\"\n}\n").unwrap();
    let hook = hook.policy(&plain.display().to_string()).unnamed();
    assert_eq!(
        hook.run(&ls).json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
}

#[test]
fn session_ids_are_never_paths() {
    let hook = Hook::new();
    let event = with("post_webfetch", json!({"session_id": "../../escape"}));
    assert_eq!(hook.run(&event).status, 0);
    let names: Vec<String> = std::fs::read_dir(hook.state_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1);
    assert!(
        names[0].starts_with("h-") && names[0].ends_with(".taint"),
        "{names:?}"
    );
    assert!(!hook.state.path().join("escape").exists());
    let pre = with(
        "pre_bash",
        json!({"session_id": "../../escape", "tool_input": {"command": "ls"}}),
    );
    assert_eq!(
        hook.run(&pre).json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
}

#[test]
fn fifty_hooks_of_one_session_at_once_lose_no_taint() {
    let hook = Hook::new();
    let exe = std::path::PathBuf::from(crate::common::MCPPOL);
    let mut children = Vec::new();
    for i in 0..50 {
        let event = with(
            "post_mcp",
            json!({"tool_name": format!("mcp__server{i}__read"), "tool_use_id": format!("toolu_{i}")}),
        );
        let mut child = Process::new(&exe)
            .args(["claude-hook", "--policy", POLICY, "--name", "claude"])
            .arg("--state-dir")
            .arg(hook.state_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Write and close stdin now; the children run side by side.
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(event.to_string().as_bytes()).unwrap();
        drop(stdin);
        children.push(child);
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
    let text = std::fs::read_to_string(taint_file(&hook.state_dir())).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.remove(0), "mcppol taint 1");
    lines.sort_unstable();
    let mut expected: Vec<String> = (0..50).map(|i| format!("\"server{i}\"")).collect();
    expected.sort_unstable();
    assert_eq!(lines, expected);
    // Nothing left behind but the one file.
    assert_eq!(std::fs::read_dir(hook.state_dir()).unwrap().count(), 1);
}

fn settings_block(command: &str) -> Value {
    let hook = json!([{"type": "command", "command": command, "timeout": 30}]);
    let matcher = "mcp__.*|WebFetch|WebSearch|ReadMcpResourceTool|ListMcpResourcesTool";
    json!({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": hook}],
        "PostToolUse": [{"matcher": matcher, "hooks": hook}],
        "PostToolUseFailure": [{"matcher": matcher, "hooks": hook}],
        "SessionEnd": [{"hooks": hook}],
    }})
}

#[test]
fn print_settings_prints_the_block_that_installs_the_hook() {
    let exe = std::path::PathBuf::from(crate::common::MCPPOL);
    let exe = exe.display();
    let out = crate::common::mcppol()
        .args([
            "claude-hook",
            "--print-settings",
            "--policy",
            "policies/claude-code.mcppol",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let cwd = std::env::current_dir().unwrap();
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        settings_block(&format!(
            "{exe} claude-hook --policy {}/policies/claude-code.mcppol || exit 2",
            cwd.display()
        ))
    );
    // Without a policy: the project's `.claude/policy.mcppol`; the other
    // flags are carried over.
    let out = crate::common::mcppol()
        .args([
            "claude-hook",
            "--print-settings",
            "--servers",
            "a__b,c",
            "--builtin-server",
            "cc",
            "--state-dir",
            "/var/lib/my state",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        settings_block(&format!(
            "{exe} claude-hook --policy \"$CLAUDE_PROJECT_DIR\"/.claude/policy.mcppol --servers a__b,c --builtin-server cc --state-dir '/var/lib/my state' || exit 2"
        ))
    );
    // A policy that does not load is not installed.
    let out = crate::common::mcppol()
        .args(["claude-hook", "--print-settings", "--policy", "nope.mcppol"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_printed_command_blocks_when_mcppol_cannot_run() {
    // The command as installed, with a binary that is not there.
    let command = "/nonexistent/mcppol claude-hook --policy p.mcppol || exit 2";
    let out = Process::new("sh").args(["-c", command]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_bundled_policy_as_claude_code_runs_it() {
    let hook = Hook::new().policy("policies/claude-code.mcppol").unnamed();
    let decision = |event: &Value| -> String {
        let run = hook.run(event);
        assert_eq!(run.status, 0, "{}", run.stderr);
        run.json()["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(decision(&fixture("pre_bash")), "deny");
    assert_eq!(decision(&fixture("pre_write")), "allow");
    let push = with(
        "pre_bash",
        json!({"tool_input": {"command": "git push origin main"}}),
    );
    assert_eq!(decision(&push), "deny");
    let ssh = with(
        "pre_bash",
        json!({"tool_name": "Read", "tool_input": {"file_path": "/home/dev/.ssh/id_ed25519"}}),
    );
    assert_eq!(decision(&ssh), "deny");
    let test = with("pre_bash", json!({"tool_input": {"command": "cargo test"}}));
    assert_eq!(decision(&test), "allow");
    assert_eq!(hook.run(&fixture("post_webfetch")).status, 0);
    assert_eq!(decision(&test), "ask");
}

/// The decision and reason of a `PreToolUse` run.
fn decided(run: &Run) -> (String, String) {
    assert_eq!(run.status, 0, "{}", run.stderr);
    let v = run.json();
    (
        v["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap()
            .to_string(),
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

fn tool_event(tool: &str, input: Value) -> Value {
    with("pre_bash", json!({"tool_name": tool, "tool_input": input}))
}

#[test]
fn paths_are_placed_as_claude_code_places_them() {
    // The bundled policy's `search` allows a search inside `$CWD`
    // (/home/dev/project); HOME is /home/dev.
    let hook = Hook::new().policy("policies/claude-code.mcppol").unnamed();
    let d = |tool: &str, input: Value| decided(&hook.run(&tool_event(tool, input))).0;
    assert_eq!(d("Grep", json!({"pattern": "k", "path": "~/.aws"})), "ask");
    assert_eq!(d("Glob", json!({"pattern": "*", "path": "~"})), "ask");
    assert_eq!(d("Grep", json!({"pattern": "k", "path": " /etc"})), "ask");
    assert_eq!(d("Grep", json!({"pattern": "k", "path": "/etc\n"})), "ask");
    assert_eq!(d("LS", json!({"path": "~/"})), "ask");
    // Inside the folder, once placed.
    assert_eq!(d("Grep", json!({"pattern": "k", "path": " src "})), "allow");
    assert_eq!(
        d("Grep", json!({"pattern": "k", "path": "~/project/src"})),
        "allow"
    );
    assert_eq!(
        d(
            "Write",
            json!({"file_path": "~/project/src/x.rs", "content": ""})
        ),
        "allow"
    );
    // `~/` outside the folder is outside, whatever tool writes it.
    assert_eq!(
        d("Write", json!({"file_path": "~/.bashrc", "content": ""})),
        "deny"
    );
    assert_eq!(
        d(
            "NotebookEdit",
            json!({"notebook_path": "~/n.ipynb", "new_source": ""})
        ),
        "deny"
    );
    // `~user` is not expanded by Claude Code: a folder of that name.
    assert_eq!(
        d("Grep", json!({"pattern": "k", "path": "~dev/x"})),
        "allow"
    );
    // Another home folder moves `~` with it.
    let other = Hook::new()
        .policy("policies/claude-code.mcppol")
        .unnamed()
        .env("HOME", Some("/home/dev/project"));
    assert_eq!(
        decided(&other.run(&tool_event(
            "Grep",
            json!({"pattern": "k", "path": "~/src"})
        )))
        .0,
        "allow"
    );
}

#[test]
fn a_tilde_path_without_a_home_fails_closed() {
    for home in [None, Some("relative/home")] {
        let hook = Hook::new()
            .policy("policies/claude-code.mcppol")
            .unnamed()
            .env("HOME", home);
        let (decision, reason) =
            decided(&hook.run(&tool_event("Glob", json!({"pattern": "*", "path": "~"}))));
        assert_eq!(decision, "deny");
        assert_eq!(
            reason,
            failed("Glob `path`: the path `~` starts with `~`, which Claude Code expands to the home folder, and HOME is not an absolute path here, so mcppol cannot tell which file it names")
        );
        // A path without `~` needs no home.
        let (decision, _) =
            decided(&hook.run(&tool_event("Grep", json!({"pattern": "k", "path": "src"}))));
        assert_eq!(decision, "allow");
    }
}

/// A project installed as `--print-settings` does without `--policy`:
/// the bundled policy as `$CLAUDE_PROJECT_DIR/.claude/policy.mcppol`.
struct Project {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::copy(
            "policies/claude-code.mcppol",
            root.join(".claude/policy.mcppol"),
        )
        .unwrap();
        std::fs::copy(
            "policies/claude-code.mcppoltest",
            root.join(".claude/policy.mcppoltest"),
        )
        .unwrap();
        Project { dir, root }
    }

    fn policy(&self) -> String {
        self.root
            .join(".claude/policy.mcppol")
            .display()
            .to_string()
    }

    fn hook(&self) -> Hook {
        Hook::new().policy(&self.policy()).unnamed()
    }

    fn event(&self, tool: &str, input: Value) -> Value {
        with(
            "pre_bash",
            json!({"tool_name": tool, "tool_input": input, "cwd": self.root.display().to_string()}),
        )
    }
}

#[test]
fn the_hook_refuses_writes_to_the_policy_it_enforces() {
    let project = Project::new();
    let hook = project.hook();
    let policy = project.policy();
    let d = |tool: &str, input: Value| decided(&hook.run(&project.event(tool, input)));

    // The bundled policy allows writes inside `$CWD`; these it never sees.
    let (decision, reason) = d(
        "Write",
        json!({"file_path": policy, "content": "policy p { allow * }"}),
    );
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        format!("mcppol: deny claude/Write by the fixed rule `protected` (protected_policy): `{policy}` is, or resolves to, a file this hook enforces or keeps (its policy `{policy}`, the .mcppoltest and lock files beside it, or its state folder); no policy rule can allow it")
    );
    for (tool, input) in [
        (
            "Edit",
            json!({"file_path": ".claude/policy.mcppol", "old_string": "deny", "new_string": "allow"}),
        ),
        (
            "MultiEdit",
            json!({"file_path": " ./src/../.claude/policy.mcppol", "edits": []}),
        ),
        (
            "Write",
            json!({"file_path": ".claude/policy.mcppoltest", "content": ""}),
        ),
        (
            "Write",
            json!({"file_path": ".claude/mcppol.lock", "content": "{}"}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": ".claude/x.mcppoltest", "new_source": ""}),
        ),
        (
            "Bash",
            json!({"command": "sed -i s/deny/allow/ .claude/policy.mcppol"}),
        ),
        (
            "Bash",
            json!({"command": "cat /dev/null > ./.claude/policy.mcppoltest"}),
        ),
    ] {
        let (decision, reason) = d(tool, input.clone());
        assert_eq!(decision, "deny", "{tool} {input}");
        assert!(reason.contains("(protected_policy)"), "{reason}");
    }
    // Through a link made inside the project.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&policy, project.root.join("src/notes.md")).unwrap();
        let (decision, _) = d("Write", json!({"file_path": "src/notes.md", "content": ""}));
        assert_eq!(decision, "deny");
        std::os::unix::fs::symlink(project.root.join(".claude"), project.root.join("cfg")).unwrap();
        let (decision, _) = d("Edit", json!({"file_path": "cfg/policy.mcppol"}));
        assert_eq!(decision, "deny");
    }
    // The state folder: its taint files say what the session has read.
    let state = hook.state_dir().join("s-x.taint").display().to_string();
    let (decision, reason) = d("Write", json!({"file_path": state, "content": ""}));
    assert_eq!(decision, "deny");
    assert!(reason.contains("(protected_policy)"), "{reason}");
    let rm = format!("rm -r {}", hook.state_dir().display());
    assert_eq!(d("Bash", json!({"command": rm})).0, "deny");

    // Everything else is the policy's to decide.
    assert_eq!(
        d("Write", json!({"file_path": "src/main.rs", "content": ""})).0,
        "allow"
    );
    assert_eq!(
        d(
            "Write",
            json!({"file_path": ".claude/settings.local.json", "content": ""})
        )
        .0,
        "allow"
    );
    assert_eq!(d("Read", json!({"file_path": policy})).0, "allow");
    assert_eq!(d("Bash", json!({"command": "ls -la"})).0, "allow");
    // The file is as it was.
    assert_eq!(
        std::fs::read_to_string(&policy).unwrap(),
        std::fs::read_to_string("policies/claude-code.mcppol").unwrap()
    );
    drop(project.dir);
}

#[test]
fn mcp_resources_read_through_claude_code_taint_the_session() {
    let hook = Hook::new();
    let mail = with(
        "pre_mcp",
        json!({"tool_name": "mcp__mail__send", "tool_input": {"to": "x@example.com"}}),
    );
    assert_eq!(decided(&hook.run(&mail)).0, "allow");
    let read = with(
        "post_mcp",
        json!({"tool_name": "ReadMcpResourceTool", "tool_input": {"server": "wiki.corp", "uri": "wiki://page/1"}}),
    );
    let run = hook.run(&read);
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(
        std::fs::read_to_string(taint_file(&hook.state_dir())).unwrap(),
        "mcppol taint 1\n\"wiki.corp\"\n\"wiki_corp\"\n"
    );
    let (decision, reason) = decided(&hook.run(&mail));
    assert_eq!(decision, "deny");
    assert!(reason.contains("rule `tainted_mail`"), "{reason}");

    // A listing of every server's resources: no server to name, so it
    // counts for every server.
    let hook = Hook::new();
    let list = with(
        "post_mcp",
        json!({"tool_name": "ListMcpResourcesTool", "tool_input": {}}),
    );
    assert_eq!(hook.run(&list).status, 0);
    assert_eq!(
        std::fs::read_to_string(taint_file(&hook.state_dir())).unwrap(),
        "mcppol taint 1\n\"ListMcpResourcesTool\"\n"
    );
    assert_eq!(decided(&hook.run(&mail)).0, "deny");
    // The printed matcher runs the hook after both.
    let matcher = regex::Regex::new(&format!(
        "^(?:{})$",
        settings_block("x")["hooks"]["PostToolUse"][0]["matcher"]
            .as_str()
            .unwrap()
    ))
    .unwrap();
    assert!(matcher.is_match("ReadMcpResourceTool") && matcher.is_match("ListMcpResourcesTool"));
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn audit_writes_one_line_per_decided_call() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let hook = Hook::new().arg("--audit").arg(audit.to_str().unwrap());
    let ls = with("pre_bash", json!({"tool_input": {"command": "ls"}}));
    assert_eq!(decided(&hook.run(&ls)).0, "allow");
    assert_eq!(decided(&hook.run(&fixture("pre_bash"))).0, "deny");
    let make = with("pre_bash", json!({"tool_input": {"command": "make"}}));
    assert_eq!(decided(&hook.run(&make)).0, "ask");
    // Refused before the policy: audited too.
    let bad = with("pre_bash", json!({"session_id": null}));
    assert_eq!(decided(&hook.run(&bad)).0, "deny");
    // Taint events decide nothing: no line.
    assert_eq!(hook.run(&fixture("post_webfetch")).status, 0);
    // The audit file is the hook's own: the agent cannot rewrite it.
    let truncate = with(
        "pre_bash",
        json!({"tool_name": "Write", "tool_input": {"file_path": audit.display().to_string(), "content": ""}}),
    );
    let (decision, reason) = decided(&hook.run(&truncate));
    assert_eq!(decision, "deny");
    assert!(reason.contains("(protected_policy)"), "{reason}");

    let lines = audit_lines(&audit);
    assert_eq!(lines.len(), 5, "{lines:?}");
    let pick = |l: &Value| {
        (
            l["server"].as_str().unwrap().to_string(),
            l["name"].as_str().map(str::to_string),
            l["decision"].as_str().unwrap().to_string(),
            l["source"].as_str().unwrap().to_string(),
            l["reason"].as_str().unwrap().to_string(),
            l["rule_id"].as_str().map(str::to_string),
            l["approval"].as_str().unwrap().to_string(),
        )
    };
    let s = |x: &str| x.to_string();
    assert_eq!(
        lines.iter().map(pick).collect::<Vec<_>>(),
        [
            (
                s("claude"),
                Some(s("Bash")),
                s("allow"),
                s("allow"),
                s("allow_rule"),
                Some(s("shell")),
                s("none")
            ),
            (
                s("claude"),
                Some(s("Bash")),
                s("deny"),
                s("deny"),
                s("deny_rule"),
                Some(s("no_rm_rf")),
                s("none")
            ),
            (
                s("claude"),
                Some(s("Bash")),
                s("ask"),
                s("default"),
                s("no_rule"),
                None,
                s("host")
            ),
            (
                s("claude"),
                Some(s("Bash")),
                s("deny"),
                s("hook"),
                s("hook_failed"),
                None,
                s("none")
            ),
            (
                s("claude"),
                Some(s("Write")),
                s("deny"),
                s("protected"),
                s("protected_policy"),
                None,
                s("none")
            ),
        ]
    );
    for l in &lines {
        let keys: Vec<&String> = l.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "time",
                "server",
                "kind",
                "name",
                "decision",
                "source",
                "reason",
                "rule_id",
                "args_digest",
                "approval",
                "hook_id"
            ]
        );
        assert!(l["args_digest"].as_str().unwrap().starts_with("sha256:"));
        // Never the arguments.
        assert!(!l.to_string().contains("rm -rf"));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_call_that_cannot_be_audited_is_refused() {
    let hook = Hook::new().arg("--audit").arg("/dev/full");
    let ls = with("pre_bash", json!({"tool_input": {"command": "ls"}}));
    let (decision, reason) = decided(&hook.run(&ls));
    assert_eq!(decision, "deny");
    assert!(
        reason.starts_with(
            "mcppol: deny (audit_failed): the audit line could not be written to `/dev/full`"
        ),
        "{reason}"
    );
    // A folder that does not exist.
    let hook = Hook::new().arg("--audit").arg("/nonexistent/audit.jsonl");
    assert!(decided(&hook.run(&ls)).1.contains("(audit_failed)"));
}

#[test]
fn print_settings_carries_the_audit_file() {
    let out = crate::common::mcppol()
        .args([
            "claude-hook",
            "--print-settings",
            "--audit",
            "/var/log/mcppol hook.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let command = printed["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.ends_with(" --audit '/var/log/mcppol hook.jsonl' || exit 2"),
        "{command}"
    );
}

#[test]
fn explain_shows_the_fixed_rule_for_a_protected_write() {
    let project = Project::new();
    let policy = project.policy();
    let args = json!({"file_path": ".claude/policy.mcppol", "content": ""}).to_string();
    let cwd = project.root.display().to_string();
    let out = crate::common::mcppol()
        .env("HOME", "/home/dev")
        .args([
            "explain",
            "--policy",
            &policy,
            "--tool",
            "claude/Write",
            "--args",
            &args,
            "--cwd",
            &cwd,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "protected: matched: `{policy}` is, or resolves to, a file this hook enforces"
        )),
        "{text}"
    );
    assert!(
        text.ends_with(
            "decision: deny (source: protected, reason: protected_policy, rule_id: null)\n"
        ),
        "{text}"
    );
    let out = crate::common::mcppol()
        .env("HOME", "/home/dev")
        .args([
            "explain",
            "--policy",
            &policy,
            "--tool",
            "claude/Write",
            "--args",
            &args,
            "--cwd",
            &cwd,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["decision"],
        json!({"decision": "deny", "source": "protected", "reason": "protected_policy", "rule_id": null})
    );
    assert_eq!(v["steps"][0]["stage"], "protected");
    // Another file is the policy's to decide.
    let other = json!({"file_path": "src/main.rs", "content": ""}).to_string();
    let out = crate::common::mcppol()
        .args([
            "explain",
            "--policy",
            &policy,
            "--tool",
            "claude/Write",
            "--args",
            &other,
            "--cwd",
            &cwd,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("decision: allow (source: allow, reason: allow_rule, rule_id: edits)"),
        "{text}"
    );
}
