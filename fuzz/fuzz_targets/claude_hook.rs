//! The Claude Code hook on arbitrary input, with the bundled
//! `policies/claude-code.mcppol`: it never panics and never fails open.
//! Its exit status is 0 or 2 (anything else lets Claude Code run the
//! tool); with 2 it prints only a reason on stderr; with 0 any output is
//! one JSON object, and a `PreToolUse` answer is allow, ask or deny. Input
//! starting with a NUL byte goes to the taint file's reader instead: it
//! reads server ids or refuses, and the ids it reads, written back, read
//! the same.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::claude::{parse_taint, run_hook, HookConfig, TAINT_HEADER};
use serde_json::Value;

struct Setup {
    config: HookConfig,
    state: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mcppol-fuzz-claude-{}", std::process::id()));
        let state = dir.join("state");
        if let Err(e) = std::fs::create_dir_all(&state) {
            panic!("cannot create {}: {e}", state.display());
        }
        let policy = dir.join("claude-code.mcppol");
        if let Err(e) = std::fs::write(&policy, include_str!("../../policies/claude-code.mcppol")) {
            panic!("cannot write {}: {e}", policy.display());
        }
        let mut config = HookConfig::new(policy);
        config.state_dir = Some(state.clone());
        config.servers = vec!["github".into(), "my__server".into()];
        Setup { config, state }
    })
}

fuzz_target!(|data: &[u8]| {
    if let Some(taint) = data.strip_prefix(b"\0") {
        if let Ok(servers) = parse_taint(taint) {
            let mut text = format!("{TAINT_HEADER}\n");
            for s in &servers {
                text.push_str(&Value::String(s.clone()).to_string());
                text.push('\n');
            }
            assert_eq!(parse_taint(text.as_bytes()).ok(), Some(servers));
        }
        return;
    }
    let s = setup();
    let out = run_hook(&s.config, data);
    match out.status {
        0 => {
            if let Some(stdout) = &out.stdout {
                assert!(
                    stdout.ends_with('\n') && stdout.lines().count() == 1,
                    "{stdout:?}"
                );
                let v: Value = match serde_json::from_str(stdout) {
                    Ok(v) => v,
                    Err(e) => panic!("not JSON ({e}): {stdout:?}"),
                };
                if let Some(answer) = v.get("hookSpecificOutput") {
                    let d = answer["permissionDecision"].as_str();
                    assert!(matches!(d, Some("allow" | "ask" | "deny")), "{v}");
                    assert!(answer["permissionDecisionReason"].is_string(), "{v}");
                } else {
                    assert_eq!(v["decision"], "block", "{v}");
                }
            }
        }
        2 => {
            assert!(out.stdout.is_none(), "{out:?}");
            assert!(out
                .stderr
                .as_deref()
                .is_some_and(|e| e.starts_with("mcppol claude-hook: ")));
        }
        other => panic!("exit status {other}: {out:?}"),
    }
    // Each input starts from no taint: the files of this run go.
    if let Ok(entries) = std::fs::read_dir(&s.state) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
});
