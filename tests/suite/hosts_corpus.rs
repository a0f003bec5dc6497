//! The held-out corpus of `mcppol hook HOST`: calls in each host's native
//! shape that the tests of `hosts` do not use, with the decision the bundled
//! coding-agent policy gives them, read by each host's own rules.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};

use crate::hosts::{effect, fixture, hook, shell, with, Effect, Run, Runs, P};

/// The held-out corpus: calls in each host's native shape the tests above
/// do not use, with the decision the policy gives them. No host, by its
/// own rules, may run a call the policy denies or asks about.
fn corpus() -> Vec<(&'static str, Value, &'static str)> {
    let copilot_args = |v: Value| Value::String(v.to_string());
    vec![
        ("codex", with(fixture("codex", "PreToolUse"), &[("/tool_name", json!("apply_patch")), ("/tool_input/command", json!("*** Begin Patch\n*** Add File: /etc/cron.d/x\n+x\n*** End Patch\n"))]), "deny"),
        ("codex", with(fixture("codex", "PreToolUse"), &[("/tool_name", json!("apply_patch")), ("/tool_input/command", json!("*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch\n"))]), "allow"),
        ("codex", with(fixture("codex", "PreToolUse"), &[("/tool_name", json!("mcp__mail__send_message")), ("/tool_input", json!({"to": "x"}))]), "ask"),
        ("codex", shell("codex", "cat ~/.ssh/id_rsa"), "deny"),
        ("cursor", with(fixture("cursor", "beforeReadFile"), &[("/file_path", json!(format!("{P}/.env")))]), "deny"),
        ("cursor", with(fixture("cursor", "preToolUse"), &[("/tool_input/file_path", json!("/home/dev/.bashrc"))]), "deny"),
        ("cursor", with(fixture("cursor", "beforeMCPExecution"), &[("/tool_name", json!("create_issue"))]), "ask"),
        ("cursor", with(fixture("cursor", "beforeMCPExecution"), &[("/mcp_server_name", Value::Null)]), "deny"),
        ("gemini", with(fixture("gemini", "BeforeTool"), &[("/tool_name", json!("write_file")), ("/tool_input", json!({"file_path": "../outside.txt", "content": "x"}))]), "deny"),
        ("gemini", with(fixture("gemini", "BeforeTool"), &[("/tool_name", json!("read_file")), ("/tool_input", json!({"file_path": "src/main.rs"}))]), "allow"),
        ("gemini", with(fixture("gemini", "BeforeTool-mcp"), &[("/mcp_context", Value::Null), ("/tool_name", json!("mcp_my_srv_send_x"))]), "ask"),
        ("copilot", with(fixture("copilot", "preToolUse"), &[("/toolName", json!("create")), ("/toolArgs", copilot_args(json!({"path": "/etc/passwd", "file_text": "x"})))]), "deny"),
        ("copilot", with(fixture("copilot", "preToolUse"), &[("/toolName", json!("view")), ("/toolArgs", copilot_args(json!({"path": "src/main.rs"})))]), "allow"),
        ("copilot", with(fixture("copilot", "preToolUse"), &[("/toolName", json!("github-get_issue")), ("/toolArgs", copilot_args(json!({"issue_number": 1})))]), "ask"),
        ("copilot", with(fixture("copilot", "preToolUse"), &[("/toolArgs", json!("{not json"))]), "deny"),
        ("cline", with(fixture("cline", "PreToolUse"), &[("/preToolUse/toolName", json!("write_to_file")), ("/preToolUse/parameters", json!({"path": "../../x", "content": "x"}))]), "deny"),
        ("cline", with(fixture("cline", "PreToolUse"), &[("/preToolUse/toolName", json!("read_file")), ("/preToolUse/parameters", json!({"path": "src/main.rs"}))]), "allow"),
        ("cline", with(fixture("cline", "PreToolUse"), &[("/workspaceRoots", json!(["/a", "/b"])), ("/preToolUse/toolName", json!("read_file")), ("/preToolUse/parameters", json!({"path": "src/main.rs"}))]), "deny"),
        ("cline", with(fixture("cline", "PreToolUse-mcp"), &[("/preToolUse/parameters/tool_name", json!("send_mail"))]), "ask"),
        ("goose", with(fixture("goose", "PreToolUse"), &[("/tool_name", json!("developer__text_editor")), ("/tool_input", json!({"command": "write", "path": "/home/dev/.profile", "file_text": "x"}))]), "deny"),
        ("goose", with(fixture("goose", "PreToolUse"), &[("/tool_name", json!("developer__write")), ("/tool_input", json!({"path": "src/x.rs", "content": "x"}))]), "allow"),
        ("goose", with(fixture("goose", "PreToolUse"), &[("/tool_name", json!("github__create_issue")), ("/tool_input", json!({}))]), "ask"),
        ("windsurf", with(fixture("windsurf", "pre_read_code"), &[("/tool_info/file_path", json!("/home/dev/.ssh/id_ed25519"))]), "deny"),
        ("windsurf", with(fixture("windsurf", "pre_write_code"), &[("/tool_info/file_path", json!("src/lib.rs"))]), "deny"),
        ("windsurf", with(fixture("windsurf", "pre_mcp_tool_use"), &[("/tool_info/mcp_tool_name", json!("delete_repo"))]), "ask"),
    ]
}

/// Whether a host that did `got` obeyed a policy that said `verdict`.
fn obeyed(verdict: &str, got: Effect) -> bool {
    match verdict {
        "allow" => got == Runs,
        _ => got != Runs,
    }
}

#[test]
fn no_host_runs_a_call_the_policy_denies_or_asks_about() {
    let state = tempfile::tempdir().unwrap();
    for (i, (host, event, verdict)) in corpus().iter().enumerate() {
        let run = hook(host, state.path(), event);
        let got = effect(host, &run);
        assert!(
            obeyed(verdict, got),
            "corpus #{i} {host} ({verdict}): {got:?}: {} {}",
            run.stdout,
            run.stderr
        );
    }
}

/// The same corpus through `mcppol serve`: the answer's body and its
/// `mcppol-exit-status` are what the command hook prints and exits with.
#[cfg(feature = "http")]
#[test]
fn through_serve_no_host_runs_a_call_the_policy_denies_or_asks_about() {
    let state = tempfile::tempdir().unwrap();
    let server = crate::serve::start(
        std::path::Path::new("policies/coding-agent.mcppol"),
        state.path(),
    );
    for (i, (host, event, verdict)) in corpus().iter().enumerate() {
        let reply = crate::serve::http(
            &server,
            "POST",
            &format!("/v1/hooks/{host}"),
            event.to_string().as_bytes(),
        );
        let status = reply
            .headers
            .lines()
            .find_map(|l| l.strip_prefix("mcppol-exit-status: "))
            .unwrap_or_else(|| panic!("no exit status: {}", reply.headers))
            .trim()
            .parse()
            .unwrap();
        let json = reply.headers.contains("content-type: application/json");
        let run = Run {
            status,
            stdout: if json {
                reply.body.clone()
            } else {
                String::new()
            },
            stderr: if json {
                String::new()
            } else {
                reply.body.clone()
            },
        };
        let got = effect(host, &run);
        assert!(
            obeyed(verdict, got),
            "serve corpus #{i} {host} ({verdict}): {got:?}: {}",
            reply.body
        );
    }
}
