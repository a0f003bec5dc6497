//! `mcppol hook HOST`: each host's recorded event shapes
//! (tests/fixtures/hosts, sources in its README) fed to the real binary,
//! and what comes out read by that host's own rules (what it blocks on,
//! what it asks on, what it runs anyway): decisions, malformed and huge
//! input, unknown events, hostile session ids, taint carried from a
//! post-tool event to a later pre-tool event, and the install blocks
//! (the held-out corpus is `hosts_corpus`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::{json, Value};

const POLICY: &str = "policies/coding-agent.mcppol";
pub(crate) const P: &str = "/home/dev/project";

/// What a host does with the call, by its own documented rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    Runs,
    Asks,
    Blocked,
}
pub(crate) use Effect::*;

pub(crate) struct Run {
    pub(crate) status: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(crate) fn fixture(host: &str, name: &str) -> Value {
    let text = std::fs::read_to_string(format!("tests/fixtures/hosts/{host}/{name}.json"))
        .unwrap_or_else(|e| panic!("{host}/{name}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// `v` with the fields at JSON pointers changed (`null` removes one).
pub(crate) fn with(mut v: Value, changes: &[(&str, Value)]) -> Value {
    for (pointer, new) in changes {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let slot = v
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"));
        let map = slot.as_object_mut().unwrap();
        if new.is_null() {
            map.remove(key);
        } else {
            map.insert(key.to_string(), new.clone());
        }
    }
    v
}

fn hook_bytes(host: &str, state: &Path, input: &[u8], extra: &[&str]) -> Run {
    let out = crate::common::mcppol()
        .env("HOME", "/home/dev")
        .args(["hook", host, "--policy", POLICY, "--state-dir"])
        .arg(state)
        .args(extra)
        .write_stdin(input.to_vec())
        .output()
        .unwrap();
    Run {
        status: out.status.code().expect("killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

pub(crate) fn hook(host: &str, state: &Path, event: &Value) -> Run {
    hook_bytes(host, state, event.to_string().as_bytes(), &[])
}

/// What `host` does with a pre-tool answer, by its own rules.
pub(crate) fn effect(host: &str, run: &Run) -> Effect {
    let v: Option<Value> = serde_json::from_str(run.stdout.trim()).ok();
    let field = |k: &str| -> String {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match host {
        // Exit 2 with a reason blocks; anything else runs (an `ask` too).
        "codex" => {
            if run.status == 2 && !run.stderr.trim().is_empty() {
                return Blocked;
            }
            assert!(
                run.stdout.is_empty(),
                "codex allows with no output: {}",
                run.stdout
            );
            Runs
        }
        // failClosed: every exit but 0 blocks.
        "cursor" => match (run.status, field("permission").as_str()) {
            (0, "deny") => Blocked,
            (0, "ask") => Asks,
            (0, _) => Runs,
            _ => Blocked,
        },
        "gemini" => match (run.status, field("decision").as_str()) {
            (2, _) => Blocked,
            (0, "deny" | "block") => Blocked,
            (0, "ask") => Asks,
            _ => Runs,
        },
        // Only a deny on exit 0 blocks.
        "copilot" => match (run.status, field("permissionDecision").as_str()) {
            (0, "deny") => Blocked,
            _ => Runs,
        },
        "cline" => match v.as_ref().and_then(|v| v.get("cancel")) {
            Some(Value::Bool(true)) => Blocked,
            _ => Runs,
        },
        "goose" => match (run.status, field("decision").as_str()) {
            (2, _) | (_, "block") => Blocked,
            _ => Runs,
        },
        "windsurf" => {
            if run.status == 2 {
                Blocked
            } else {
                Runs
            }
        }
        other => panic!("no rules for {other}"),
    }
}

/// Each host's pre-tool fixture for a shell command, and where the
/// command goes.
const SHELLS: [(&str, &str, &str); 7] = [
    ("codex", "PreToolUse", "/tool_input/command"),
    ("cursor", "beforeShellExecution", "/command"),
    ("gemini", "BeforeTool", "/tool_input/command"),
    ("copilot", "preToolUse", "/toolArgs"),
    ("cline", "PreToolUse", "/preToolUse/parameters/command"),
    ("goose", "PreToolUse", "/tool_input/command"),
    ("windsurf", "pre_run_command", "/tool_info/command_line"),
];

pub(crate) fn shell(host: &str, command: &str) -> Value {
    let (_, name, pointer) = SHELLS.iter().find(|(h, _, _)| *h == host).unwrap();
    let value = if host == "copilot" {
        Value::String(json!({ "command": command }).to_string())
    } else {
        Value::String(command.to_string())
    };
    with(fixture(host, name), &[(pointer, value)])
}

#[test]
fn every_pre_tool_fixture_is_decided_and_answered_in_the_hosts_form() {
    let state = tempfile::tempdir().unwrap();
    let allowed = [
        ("codex", "PreToolUse"),
        ("cursor", "beforeShellExecution"),
        ("cursor", "beforeReadFile"),
        ("cursor", "beforeMCPExecution"),
        ("cursor", "preToolUse"),
        ("gemini", "BeforeTool"),
        ("gemini", "BeforeTool-mcp"),
        ("copilot", "preToolUse"),
        ("cline", "PreToolUse"),
        ("cline", "PreToolUse-mcp"),
        ("goose", "PreToolUse"),
        ("windsurf", "pre_run_command"),
        ("windsurf", "pre_mcp_tool_use"),
    ];
    for (host, name) in allowed {
        let run = hook(host, state.path(), &fixture(host, name));
        assert_eq!(
            effect(host, &run),
            Runs,
            "{host}/{name}: {} {}",
            run.stdout,
            run.stderr
        );
        assert_eq!(run.status, 0, "{host}/{name}");
    }
    // Windsurf's file events carry no working folder: `$CWD` is unknown, so
    // neither "inside the project" nor "escapes it" can be told: a read
    // falls to the default (an ask, blocked), a write to the deny rule
    // whose test failed closed.
    for (name, by) in [
        ("pre_read_code", "by the default (no_rule)"),
        (
            "pre_write_code",
            "by rule `outside_file_path` (predicate_failed)",
        ),
    ] {
        let run = hook("windsurf", state.path(), &fixture("windsurf", name));
        assert_eq!(effect("windsurf", &run), Blocked, "{name}");
        assert!(run.stderr.contains(by), "{}", run.stderr);
    }
    // The exact answers of the JSON hosts.
    let run = hook("copilot", state.path(), &fixture("copilot", "preToolUse"));
    assert_eq!(run.stdout, "{\"permissionDecision\":\"allow\"}\n");
    let run = hook("cline", state.path(), &fixture("cline", "PreToolUse"));
    assert_eq!(run.stdout, "{\"cancel\":false}\n");
    let run = hook(
        "cursor",
        state.path(),
        &fixture("cursor", "beforeShellExecution"),
    );
    assert_eq!(run.stdout, "{\"permission\":\"allow\"}\n");
    let run = hook("gemini", state.path(), &fixture("gemini", "BeforeTool"));
    assert_eq!(run.stdout, "{\"decision\":\"allow\"}\n");
}

#[test]
fn a_denied_call_is_blocked_in_each_hosts_blocking_form() {
    let state = tempfile::tempdir().unwrap();
    for (host, _, _) in SHELLS {
        let run = hook(host, state.path(), &shell(host, "rm -rf /"));
        assert_eq!(
            effect(host, &run),
            Blocked,
            "{host}: {} {}",
            run.stdout,
            run.stderr
        );
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(said.contains("by rule `no_rm_rf"), "{host}: {said}");
        assert!(said.contains(&format!("deny {host}/")), "{host}: {said}");
    }
    let run = hook("codex", state.path(), &shell("codex", "rm -rf /"));
    assert_eq!(run.status, 2);
    assert!(
        run.stderr
            .starts_with("mcppol hook codex: mcppol: deny codex/Bash by rule `no_rm_rf`"),
        "{}",
        run.stderr
    );
    let run = hook("goose", state.path(), &shell("goose", "rm -rf /"));
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((run.status, &v["decision"]), (2, &json!("block")));
}

#[test]
fn an_ask_is_the_hosts_ask_where_it_has_one_else_a_block_that_says_how_to_approve() {
    let state = tempfile::tempdir().unwrap();
    for (host, _, _) in SHELLS {
        let run = hook(host, state.path(), &shell(host, "make"));
        let expected = if ["cursor", "gemini"].contains(&host) {
            Asks
        } else {
            Blocked
        };
        assert_eq!(
            effect(host, &run),
            expected,
            "{host}: {} {}",
            run.stdout,
            run.stderr
        );
        if expected == Blocked {
            let said = format!("{}{}", run.stdout, run.stderr);
            assert!(
                said.contains("hooks cannot ask, so it is blocked"),
                "{host}: {said}"
            );
            assert!(
                said.contains("change the rule to `allow`"),
                "{host}: {said}"
            );
        }
    }
    // Cursor cannot ask before reading a file.
    let outside = with(
        fixture("cursor", "beforeReadFile"),
        &[("/file_path", json!("/etc/hosts"))],
    );
    let run = hook("cursor", state.path(), &outside);
    assert_eq!(effect("cursor", &run), Blocked, "{}", run.stdout);
}

/// An event no host's hook handles, in each host's envelope.
fn unknown_event(host: &str) -> Value {
    match host {
        "copilot" => json!({"timestamp": 1, "cwd": P, "prompt": "hi"}),
        "cline" => with(
            fixture(host, "TaskComplete"),
            &[("/hookName", json!("UserPromptSubmit"))],
        ),
        "windsurf" => with(
            fixture(host, "pre_read_code"),
            &[("/agent_action_name", json!("pre_user_prompt"))],
        ),
        "cursor" => with(
            fixture(host, "sessionEnd"),
            &[("/hook_event_name", json!("beforeSubmitPrompt"))],
        ),
        _ => with(shell(host, "ls"), &[("/hook_event_name", json!("Stop"))]),
    }
}

#[test]
fn malformed_huge_unknown_and_incomplete_input_is_blocked() {
    let state = tempfile::tempdir().unwrap();
    let huge = vec![b' '; (16 << 20) + 1];
    for (host, _, _) in SHELLS {
        for (what, bytes) in [
            ("not JSON", b"{".to_vec()),
            ("not an object", b"[1]".to_vec()),
            ("huge", huge.clone()),
            (
                "unknown event",
                unknown_event(host).to_string().into_bytes(),
            ),
        ] {
            let run = hook_bytes(host, state.path(), &bytes, &[]);
            assert_eq!(
                effect(host, &run),
                Blocked,
                "{host} {what}: {} {}",
                run.stdout,
                run.stderr
            );
        }
        // A pre-tool event without its tool name.
        let (_, name, _) = SHELLS.iter().find(|(h, _, _)| *h == host).unwrap();
        let pointer = match host {
            "copilot" => "/toolName",
            "cline" => "/preToolUse/toolName",
            "cursor" => "/command",
            "windsurf" => "/tool_info",
            _ => "/tool_name",
        };
        let run = hook(
            host,
            state.path(),
            &with(fixture(host, name), &[(pointer, Value::Null)]),
        );
        assert_eq!(
            effect(host, &run),
            Blocked,
            "{host} incomplete: {} {}",
            run.stdout,
            run.stderr
        );
        assert!(format!("{}{}", run.stdout, run.stderr).contains("could not decide this call"));
    }
    // A policy that does not load blocks too.
    let run = crate::common::mcppol()
        .args([
            "hook",
            "cline",
            "--policy",
            "tests/fixtures/hosts/README.md",
            "--state-dir",
        ])
        .arg(state.path())
        .write_stdin(fixture("cline", "PreToolUse").to_string())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["cancel"], true);
}

/// Each host's post-tool fixture that taints the session, and the field
/// that holds the session id.
const POSTS: [(&str, &str, &str); 7] = [
    ("codex", "PostToolUse", "/session_id"),
    ("cursor", "afterMCPExecution", "/conversation_id"),
    ("gemini", "AfterTool", "/session_id"),
    ("copilot", "postToolUse", "/sessionId"),
    ("cline", "PostToolUse", "/taskId"),
    ("goose", "PostToolUse", "/session_id"),
    ("windsurf", "post_mcp_tool_use", "/trajectory_id"),
];

#[test]
fn taint_from_a_post_tool_event_reaches_the_next_call_of_the_session() {
    for (host, post, session) in POSTS {
        let state = tempfile::tempdir().unwrap();
        let id = json!(format!("{host}-session-1"));
        let pre = with(shell(host, "git status"), &[(session, id.clone())]);
        let run = hook(host, state.path(), &pre);
        assert_eq!(
            effect(host, &run),
            Runs,
            "{host} before: {} {}",
            run.stdout,
            run.stderr
        );
        let run = hook(
            host,
            state.path(),
            &with(fixture(host, post), &[(session, id.clone())]),
        );
        assert_eq!(run.status, 0, "{host} post: {}", run.stderr);
        let run = hook(host, state.path(), &pre);
        let expected = if ["cursor", "gemini"].contains(&host) {
            Asks
        } else {
            Blocked
        };
        assert_eq!(
            effect(host, &run),
            expected,
            "{host} after: {} {}",
            run.stdout,
            run.stderr
        );
        assert!(
            format!("{}{}", run.stdout, run.stderr).contains("tainted_shell"),
            "{host}"
        );
        // Another session is not tainted.
        let other = with(shell(host, "git status"), &[(session, json!("other"))]);
        assert_eq!(
            effect(host, &hook(host, state.path(), &other)),
            Runs,
            "{host} other"
        );
    }
}

#[test]
fn a_session_end_clears_the_sessions_taint() {
    for (host, post, end, session) in [
        ("gemini", "AfterTool", "SessionEnd", "/session_id"),
        ("cline", "PostToolUse", "TaskComplete", "/taskId"),
        ("goose", "PostToolUseFailure", "SessionEnd", "/session_id"),
        (
            "cursor",
            "afterMCPExecution",
            "sessionEnd",
            "/conversation_id",
        ),
        ("copilot", "postToolUse", "sessionEnd", "/sessionId"),
    ] {
        let state = tempfile::tempdir().unwrap();
        let id = json!("s-end");
        hook(
            host,
            state.path(),
            &with(fixture(host, post), &[(session, id.clone())]),
        );
        let pre = with(shell(host, "git status"), &[(session, id.clone())]);
        assert_ne!(
            effect(host, &hook(host, state.path(), &pre)),
            Runs,
            "{host} tainted"
        );
        let run = hook(
            host,
            state.path(),
            &with(fixture(host, end), &[(session, id.clone())]),
        );
        assert_eq!(run.status, 0, "{host} end: {}", run.stderr);
        assert_eq!(
            effect(host, &hook(host, state.path(), &pre)),
            Runs,
            "{host} after end"
        );
    }
}

#[test]
fn hostile_session_ids_never_leave_the_state_folder() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    for (host, post, session) in POSTS {
        for id in [
            "../../escaped",
            "/tmp/abs",
            "a/../../b",
            "..",
            "x\u{0}y",
            &"z".repeat(5000),
        ] {
            let run = hook(
                host,
                &state,
                &with(fixture(host, post), &[(session, json!(id))]),
            );
            if id.len() > 4096 {
                // Too long to be a session id: refused, nothing written.
                assert_ne!(run.status + run.stdout.len() as i32, 0, "{host}");
                continue;
            }
            assert_eq!(run.status, 0, "{host} {id:?}: {}", run.stderr);
        }
    }
    // Only taint files, all inside the state folder, none beside it.
    let inside: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!inside.is_empty());
    assert!(
        inside
            .iter()
            .all(|n| n.ends_with(".taint") && !n.contains('/')),
        "{inside:?}"
    );
    let beside: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
    assert_eq!(beside.len(), 1, "only the state folder");
}

#[test]
fn hook_claude_is_claude_hook_byte_for_byte() {
    let state = tempfile::tempdir().unwrap();
    for name in ["pre_bash", "pre_write"] {
        let input = std::fs::read(format!("tests/fixtures/claude/{name}.json")).unwrap();
        let run = |verb: &[&str]| {
            crate::common::mcppol()
                .env("HOME", "/home/dev")
                .args(verb)
                .args([
                    "--policy",
                    "tests/fixtures/claude/policy.mcppol",
                    "--name",
                    "claude",
                    "--state-dir",
                ])
                .arg(state.path())
                .write_stdin(input.clone())
                .output()
                .unwrap()
        };
        let (a, b) = (run(&["claude-hook"]), run(&["hook", "claude"]));
        assert_eq!(
            (a.status.code(), &a.stdout, &a.stderr),
            (b.status.code(), &b.stdout, &b.stderr)
        );
    }
}

#[test]
fn print_settings_installs_each_host_with_a_guard_that_blocks() {
    for (host, file, guard) in [
        ("codex", ".codex/hooks.json", "|| exit 2"),
        ("cursor", ".cursor/hooks.json", "|| exit 2"),
        ("gemini", ".gemini/settings.json", "|| exit 2"),
        ("copilot", ".github/hooks/mcppol.json", "permissionDecision"),
        ("cline", ".clinerules/hooks/PreToolUse", "\"cancel\":true"),
        ("goose", "~/.config/goose/hooks.json", "|| exit 2"),
        ("windsurf", ".windsurf/hooks.json", "|| exit 2"),
    ] {
        let out = crate::common::mcppol()
            .args(["hook", host, "--print-settings", "--policy", POLICY])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{host}");
        let text = String::from_utf8(out.stdout).unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err, format!("# {file}\n"), "{host}");
        assert!(
            text.contains(&format!(" hook {host} --policy ")),
            "{host}: {text}"
        );
        assert!(text.contains(guard), "{host}: {text}");
        if host != "cline" {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert!(v["hooks"].is_object(), "{host}");
        }
        if host == "cursor" {
            assert!(text.contains("\"failClosed\": true"));
        }
    }
    // No policy, no install: a hook that denies everything is refused.
    let out = crate::common::mcppol()
        .args(["hook", "codex", "--print-settings"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
