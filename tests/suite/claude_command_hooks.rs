//! Claude-style command hooks through the pipeline: real shell scripts for
//! each outcome (exit 2, JSON deny, updatedInput, ask, allow, timeout,
//! crash, other exit status, unexpected output), as before- and after-hooks
//! of a governed call to an in-memory MCP server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use mcppol::mcp::{FakeServer, MemoryTransport};
use mcppol::pipeline::command_hooks::{parse_settings, CommandHookOptions};
use mcppol::pipeline::{
    Approval, ApprovalRequest, CallError, CallOptions, ErrorKind, ErrorReason, HookFailure,
    Pipeline, PolicySource, ToolResult,
};
use mcppol::{PolicySet, Reason, Verdict};
use serde_json::{json, Value};

const POLICY: &str = r#"
policy fs {
  default deny
  deny  outside: "fs/*" when args.path escapes "/srv"
  ask   writes: "fs/write_file"
  allow reads: "fs/read_file" when args.path inside "/srv"
}
"#;

fn server() -> FakeServer {
    FakeServer::new()
        .tool(json!({"name": "read_file"}), |args| {
            Ok(json!({"content": [{"type": "text", "text": format!("read {}", args["path"].as_str().unwrap_or("?"))}], "isError": false}))
        })
        .tool(json!({"name": "write_file"}), |_| {
            Ok(json!({"content": [{"type": "text", "text": "written"}], "isError": false}))
        })
        .tool(json!({"name": "delete_file"}), |_| {
            Ok(json!({"content": [{"type": "text", "text": "deleted"}], "isError": false}))
        })
}

struct Setup {
    dir: tempfile::TempDir,
    fake: FakeServer,
    pipeline: Pipeline,
    asked: Arc<Mutex<Vec<ApprovalRequest>>>,
}

/// Writes the scripts (`name` -> body, run by `sh`), and a settings file
/// naming them with `$CLAUDE_PROJECT_DIR`; builds the pipeline.
fn setup(settings: Value, scripts: &[(&str, &str)], approver: Option<Approval>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in scripts {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let options = CommandHookOptions {
        session_id: "sess-1".into(),
        ..CommandHookOptions::new(dir.path())
    };
    let hooks = parse_settings("settings.json", &settings.to_string(), &options).unwrap();
    let set = PolicySet::from_text("fs.mcppol", POLICY).unwrap();
    let policy = PolicySource::Fixed(set.get("fs").unwrap().clone());
    let fake = server();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut builder =
        Pipeline::builder("fs", Arc::new(MemoryTransport::new(fake.clone())), policy).hooks(hooks);
    if let Some(answer) = approver {
        let asked = asked.clone();
        builder = builder.approver(move |req: ApprovalRequest| {
            asked.lock().unwrap().push(req);
            let answer = answer.clone();
            async move { Ok(answer) }
        });
    }
    Setup {
        dir,
        fake,
        pipeline: builder.build().unwrap(),
        asked,
    }
}

fn pre(matcher: &str, script: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": format!("sh \"$CLAUDE_PROJECT_DIR/{script}\""), "timeout": 5}
    ]}]}})
}

fn post(script: &str) -> Value {
    json!({"hooks": {"PostToolUse": [{"matcher": "mcp__fs__.*", "hooks": [
        {"type": "command", "command": format!("sh \"$CLAUDE_PROJECT_DIR/{script}\"")}
    ]}]}})
}

async fn call(s: &Setup, tool: &str, path: &str) -> Result<ToolResult, CallError> {
    s.pipeline
        .call_tool(tool, json!({"path": path}), &CallOptions::default())
        .await
}

fn sent(s: &Setup) -> Vec<Value> {
    s.fake.calls()
}

fn hook_failed(e: &CallError, how: HookFailure) {
    assert_eq!(e.kind, ErrorKind::Hook, "{e:?}");
    assert_eq!(e.reason, ErrorReason::HookFailed(how), "{e:?}");
    assert_eq!(e.hook_id.as_deref(), Some("claude:PreToolUse[0].hooks[0]"));
}

#[tokio::test]
async fn the_command_gets_the_event_claude_code_sends() {
    let s = setup(
        pre("mcp__fs__read_file", "hook.sh"),
        &[(
            "hook.sh",
            "cat > \"$CLAUDE_PROJECT_DIR/event.json\"\npwd > \"$CLAUDE_PROJECT_DIR/pwd.txt\"\n",
        )],
        None,
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert_eq!(r.joined_text(), "read /srv/a.txt");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(s.dir.path().join("event.json")).unwrap())
            .unwrap();
    let cwd = s.dir.path().to_string_lossy().to_string();
    assert_eq!(
        event,
        json!({
            "session_id": "sess-1",
            "transcript_path": "",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "mcp__fs__read_file",
            "tool_input": {"path": "/srv/a.txt"},
            "tool_use_id": event["tool_use_id"],
        })
    );
    assert!(event["tool_use_id"]
        .as_str()
        .unwrap()
        .starts_with("mcppol_"));
    let pwd = std::fs::read_to_string(s.dir.path().join("pwd.txt")).unwrap();
    assert_eq!(
        Path::new(pwd.trim()).canonicalize().unwrap(),
        s.dir.path().canonicalize().unwrap()
    );
    // The matcher is a regex on the Claude name: the hook does not run for
    // another tool.
    std::fs::remove_file(s.dir.path().join("event.json")).unwrap();
    let _ = call(&s, "write_file", "/srv/a.txt").await;
    assert!(!s.dir.path().join("event.json").exists());
}

#[tokio::test]
async fn exit_2_denies_with_stderr_as_the_reason() {
    let s = setup(
        pre("*", "deny.sh"),
        &[(
            "deny.sh",
            "cat >/dev/null\necho 'no reading of secrets' >&2\nexit 2\n",
        )],
        None,
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(
        (e.kind, e.reason),
        (ErrorKind::Denied, ErrorReason::HookDenied)
    );
    assert_eq!(e.hook_id.as_deref(), Some("claude:PreToolUse[0].hooks[0]"));
    assert_eq!(e.detail.as_deref(), Some("no reading of secrets"));
    assert!(sent(&s).is_empty(), "nothing is sent");
}

#[tokio::test]
async fn a_json_deny_denies() {
    let s = setup(
        pre("mcp__fs__.*", "deny.sh"),
        &[(
            "deny.sh",
            r#"cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "outside office hours"}}'
"#,
        )],
        None,
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(
        (e.kind, e.reason),
        (ErrorKind::Denied, ErrorReason::HookDenied)
    );
    assert_eq!(e.detail.as_deref(), Some("outside office hours"));
    assert!(sent(&s).is_empty());
    // The older form, `decision: "block"`, too.
    let s = setup(
        pre("*", "block.sh"),
        &[(
            "block.sh",
            "echo '{\"decision\": \"block\", \"reason\": \"blocked\"}'\n",
        )],
        None,
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(
        (e.reason, e.detail.as_deref()),
        (ErrorReason::HookDenied, Some("blocked"))
    );
}

#[tokio::test]
async fn updated_input_rewrites_and_policy_decides_on_the_result() {
    // A rewrite into the sandbox: allowed, and the server gets the new path.
    let s = setup(
        pre("*", "fix.sh"),
        &[(
            "fix.sh",
            r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"path": "/srv/fixed.txt"}}}'
"#,
        )],
        None,
    );
    let r = call(&s, "read_file", "/etc/passwd").await.unwrap();
    assert_eq!(r.joined_text(), "read /srv/fixed.txt");
    assert_eq!(sent(&s)[0]["arguments"], json!({"path": "/srv/fixed.txt"}));
    // A rewrite out of it: policy denies the rewritten call.
    let s = setup(
        pre("*", "break.sh"),
        &[(
            "break.sh",
            r#"echo '{"hookSpecificOutput": {"updatedInput": {"path": "/etc/shadow"}}}'
"#,
        )],
        None,
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::DenyRule));
    assert_eq!(e.decision.unwrap().rule_id.as_deref(), Some("outside"));
    assert!(sent(&s).is_empty());
    // updatedInput that is not an object fails closed.
    let s = setup(
        pre("*", "bad.sh"),
        &[(
            "bad.sh",
            "echo '{\"hookSpecificOutput\": {\"updatedInput\": [1]}}'\n",
        )],
        None,
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    hook_failed(&e, HookFailure::Error);
}

#[tokio::test]
async fn ask_turns_an_allow_into_an_ask() {
    let ask = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check this one"}}'
"#;
    // With an approver: it is asked, and its answer stands.
    let s = setup(
        pre("*", "ask.sh"),
        &[("ask.sh", ask)],
        Some(Approval::AllowOnce),
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert_eq!(r.joined_text(), "read /srv/a.txt");
    let asked = s.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].decision.decision, Verdict::Ask);
    assert_eq!(asked[0].decision.rule_id.as_deref(), Some("reads"));
    let s = setup(
        pre("*", "ask.sh"),
        &[("ask.sh", ask)],
        Some(Approval::Deny("not now".into())),
    );
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::AskDenied);
    assert!(sent(&s).is_empty());
    // Without an approver: denied, no_approver.
    let s = setup(pre("*", "ask.sh"), &[("ask.sh", ask)], None);
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::NoApprover));
    assert!(sent(&s).is_empty());
    // A deny from policy stays a deny: the approver is not asked.
    let s = setup(
        pre("*", "ask.sh"),
        &[("ask.sh", ask)],
        Some(Approval::AllowOnce),
    );
    let e = call(&s, "read_file", "/etc/passwd").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::DenyRule));
    assert!(s.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn allow_allows_nothing() {
    let allow = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "fine by me"}}'
"#;
    // Policy denies delete_file (no rule, default deny): the hook's allow
    // does not change that.
    let s = setup(
        pre("*", "allow.sh"),
        &[("allow.sh", allow)],
        Some(Approval::AllowOnce),
    );
    let e = call(&s, "delete_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::NoRule));
    // An ask rule still asks.
    let _ = call(&s, "write_file", "/srv/a.txt").await.unwrap();
    assert_eq!(s.asked.lock().unwrap().len(), 1);
    // And the legacy `approve`.
    let s = setup(
        pre("*", "approve.sh"),
        &[("approve.sh", "echo '{\"decision\": \"approve\"}'\n")],
        None,
    );
    let e = call(&s, "delete_file", "/srv/a.txt").await.unwrap_err();
    assert_eq!(e.reason, ErrorReason::Policy(Reason::NoRule));
}

#[tokio::test]
async fn failures_fail_closed() {
    let cases: [(&str, &str, HookFailure); 6] = [
        ("other exit status", "exit 3\n", HookFailure::Error),
        ("crash", "kill -9 $$\n", HookFailure::Error),
        ("not JSON", "echo 'all good'\n", HookFailure::Error),
        ("a JSON list", "echo '[]'\n", HookFailure::Error),
        (
            "an unknown decision",
            "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"maybe\"}}'\n",
            HookFailure::Error,
        ),
        (
            "output for another event",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\"}}'\n",
            HookFailure::Error,
        ),
    ];
    for (what, body, how) in cases {
        let s = setup(
            pre("*", "h.sh"),
            &[("h.sh", body)],
            Some(Approval::AllowOnce),
        );
        let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
        assert_eq!(e.reason, ErrorReason::HookFailed(how), "{what}: {e:?}");
        assert!(sent(&s).is_empty(), "{what}: nothing is sent");
    }
}

#[tokio::test]
async fn a_command_that_runs_past_its_timeout_fails_closed_and_is_killed() {
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "echo $$ > \"$CLAUDE_PROJECT_DIR/pid\"; exec sleep 30", "timeout": 0.5}
    ]}]}});
    let s = setup(settings, &[], None);
    let started = std::time::Instant::now();
    let e = call(&s, "read_file", "/srv/a.txt").await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    hook_failed(&e, HookFailure::Timeout);
    assert!(sent(&s).is_empty());
    // The process is gone (killed when the hook was dropped).
    let pid = std::fs::read_to_string(s.dir.path().join("pid")).unwrap();
    let mut gone = false;
    for _ in 0..50 {
        let status = std::process::Command::new("kill")
            .args(["-0", pid.trim()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        if !status.success() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(gone, "the command still runs");
}

#[tokio::test]
async fn post_tool_use_commands_see_the_result_and_can_block_it() {
    // The event carries tool_response; additionalContext is added.
    let s = setup(
        post("see.sh"),
        &[(
            "see.sh",
            r#"cat > "$CLAUDE_PROJECT_DIR/event.json"
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checked by the hook"}}'
"#,
        )],
        None,
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert_eq!(r.joined_text(), "read /srv/a.txt\nchecked by the hook");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(s.dir.path().join("event.json")).unwrap())
            .unwrap();
    assert_eq!(event["hook_event_name"], "PostToolUse");
    assert_eq!(
        event["tool_response"],
        json!({"content": [{"type": "text", "text": "read /srv/a.txt"}], "isError": false})
    );
    // Exit 2: the result is replaced by an error with the reason.
    let s = setup(
        post("block.sh"),
        &[("block.sh", "echo 'the result holds a key' >&2\nexit 2\n")],
        None,
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert!(r.is_error);
    assert_eq!(r.joined_text(), "the result holds a key");
    // `decision: "block"` the same way.
    let s = setup(
        post("block.sh"),
        &[(
            "block.sh",
            "echo '{\"decision\": \"block\", \"reason\": \"nope\"}'\n",
        )],
        None,
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert_eq!((r.is_error, r.joined_text().as_str()), (true, "nope"));
    // updatedMCPToolOutput replaces it.
    let s = setup(
        post("swap.sh"),
        &[(
            "swap.sh",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"updatedMCPToolOutput\": \"[redacted]\"}}'\n",
        )],
        None,
    );
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert_eq!(
        (r.is_error, r.joined_text().as_str()),
        (false, "[redacted]")
    );
    // A crash withholds the result.
    let s = setup(post("crash.sh"), &[("crash.sh", "exit 1\n")], None);
    let r = call(&s, "read_file", "/srv/a.txt").await.unwrap();
    assert!(r.is_error);
    assert_eq!(r.joined_text(), mcppol::pipeline::WITHHELD_TEXT);
}
