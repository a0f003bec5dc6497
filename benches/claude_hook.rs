//! The cost of one Claude Code hook call: process start, policy load,
//! taint file, decision and output, as Claude Code pays it. Spawns the real
//! binary (`CARGO_BIN_EXE_mcppol`) with a 100-rule policy.
//!
//! `cargo bench --bench claude_hook` (docs/performance.md has the figures).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a benchmark stops on a broken fixture

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "common/hook_policy.rs"]
mod hook_policy;
use hook_policy::policy;

const SESSION: &str = "5f0c8d2e-1b7a-4c39-9a51-0c6b2f1e7d11";

fn event(kind: &str, tool: &str, input: &str) -> Vec<u8> {
    format!(
        r#"{{"session_id": "{SESSION}", "transcript_path": "/home/dev/.claude/projects/p/{SESSION}.jsonl", "cwd": "/home/dev/project", "permission_mode": "default", "hook_event_name": "{kind}", "tool_name": "{tool}", "tool_input": {input}, "tool_use_id": "toolu_01"}}"#
    )
    .into_bytes()
}

fn run(policy: &Path, state: &Path, input: &[u8]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcppol"))
        .args(["claude-hook", "--policy"])
        .arg(policy)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcppol");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.mcppol");
    let text = policy(100);
    std::fs::write(&file, &text).unwrap();
    let state = dir.path().join("state");
    mcppol::PolicySet::from_text("bench.mcppol", &text).expect("the bench policy loads");
    let rules = text
        .lines()
        .map(str::trim_start)
        .filter(|l| ["allow ", "deny ", "ask "].iter().any(|k| l.starts_with(k)))
        .count();
    assert!(rules >= 100, "{rules} rules");

    // The session has some taint, so `tainted` reads a real file.
    run(
        &file,
        &state,
        &event("PostToolUse", "mcp__server7__get_page", "{}"),
    );
    run(
        &file,
        &state,
        &event(
            "PostToolUse",
            "WebFetch",
            r#"{"url": "https://example.com"}"#,
        ),
    );

    let mut group = c.benchmark_group("claude_hook");
    let bash = event(
        "PreToolUse",
        "Bash",
        r#"{"command": "cargo test --all", "description": "test"}"#,
    );
    group.bench_function("pre_tool_use_bash_100_rules", |b| {
        b.iter(|| run(&file, &state, &bash))
    });
    let edit = event(
        "PreToolUse",
        "Edit",
        r#"{"file_path": "/home/dev/project/src/main.rs", "old_string": "a", "new_string": "b"}"#,
    );
    group.bench_function("pre_tool_use_edit_100_rules", |b| {
        b.iter(|| run(&file, &state, &edit))
    });
    let mcp = event(
        "PreToolUse",
        "mcp__server12__send_mail",
        r#"{"to": "x@example.com"}"#,
    );
    group.bench_function("pre_tool_use_mcp_tainted_100_rules", |b| {
        b.iter(|| run(&file, &state, &mcp))
    });
    // The bundled policy for Claude Code (20 rules, a dozen regexes).
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/claude-code.mcppol");
    group.bench_function("pre_tool_use_bash_bundled_policy", |b| {
        b.iter(|| run(&bundled, &state, &bash))
    });
    let post = event("PostToolUse", "mcp__server7__get_page", "{}");
    group.bench_function("post_tool_use_taint", |b| {
        b.iter(|| run(&file, &state, &post))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
