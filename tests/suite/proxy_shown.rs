//! Issue 22, items 10 to 12, through the real `mcppol proxy` in front of
//! the scripted server (tests/fixtures/proxy, its extra tools on): what a
//! person is shown when asked, what a model is given, and the audit line
//! of every governed request.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use serde_json::{json, Value};

use super::proxy::harness::{server_log, text, Proxy};

/// Every call is asked about; `read_file` and the extra tools are allowed.
const ASK_ALL: &str = r#"
policy scripted {
  ask "scripted/*"
}
"#;

const ALLOW: &str = r#"
policy scripted {
  default deny
  tools { exclude "scripted/secret" }
  deny no_escape: "scripted/read_file" when args.path escapes "/srv"
  allow "scripted/read_file" when args.path inside "/srv"
  allow "scripted/echo", "scripted/poison", "scripted/clean", "scripted/structured",
    "scripted/big", "scripted/secret", "scripted/slow"
}
"#;

/// The name of the scripted server's tool with 22 newlines and U+202E.
fn fake_name() -> String {
    format!(
        "readme{}mcppol asks before server `scripted` runs tool `readme.txt`\u{202e}",
        "\n".repeat(22)
    )
}

fn setup(policy: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scripted.mcppol");
    std::fs::write(&path, policy).unwrap();
    let p = path.to_str().unwrap().to_string();
    (dir, p)
}

fn start(dir: &Path, policy: &str, extra: &[&str]) -> Proxy {
    let mut args = vec!["--policy", policy, "--server-id", "scripted"];
    args.extend_from_slice(extra);
    Proxy::start(dir, &args, &[("SCRIPTED_EXTRA", "1")])
}

fn calls_reaching_server(dir: &Path) -> usize {
    server_log(dir)
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .count()
}

/// The message of the elicitation the proxy sends for one call.
fn dialog(p: &mut Proxy, id: i64, tool: &str, args: Value) -> String {
    p.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                  "params": {"name": tool, "arguments": args}}));
    let ask = p.wait_for(|m| m["method"] == "elicitation/create");
    let message = ask["params"]["message"].as_str().unwrap().to_string();
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}));
    p.wait_for(|m| m["id"] == id);
    message
}

fn no_hidden_characters(text: &str) {
    for c in ['\u{202e}', '\u{200b}', '\u{2028}', '\u{1b}', '\r'] {
        assert!(!text.contains(c), "{c:?} shown raw in {text:?}");
    }
}

#[test]
fn the_dialog_shows_every_key_of_a_long_call_and_says_what_was_cut() {
    let (dir, policy) = setup(ASK_ALL);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"elicitation": {}}));
    // The caller's key order puts 2,100 bytes before the path.
    let message = dialog(
        &mut p,
        10,
        "echo",
        json!({"content": "A".repeat(2100), "path": "/etc/cron.d/evil"}),
    );
    assert!(message.contains("/etc/cron.d/evil"), "{message}");
    assert!(message.contains("path"), "{message}");
    assert!(message.contains("cut"), "the cut is not said: {message}");
    assert!(message.len() < 4000, "{}", message.len());
    no_hidden_characters(&message);

    // More keys than are shown: how many more is said.
    let many: serde_json::Map<String, Value> =
        (0..100).map(|i| (format!("k{i:03}"), json!(i))).collect();
    let message = dialog(&mut p, 11, "echo", Value::Object(many));
    assert!(message.contains("more"), "{message}");
    assert!(message.contains("k000"), "{message}");
}

#[test]
fn a_tool_name_with_newlines_and_u202e_cannot_fake_a_line_of_the_dialog() {
    let (dir, policy) = setup(ASK_ALL);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"elicitation": {}}));
    let name = fake_name();
    let message = dialog(&mut p, 12, &name, json!({"x": "a\u{202e}b\nc"}));
    no_hidden_characters(&message);
    let asks = message
        .lines()
        .filter(|l| l.trim_start().starts_with("mcppol asks"))
        .count();
    assert_eq!(asks, 1, "{message}");
    assert!(message.contains("\\u{202e}"), "{message}");
}

#[test]
fn the_approver_reads_the_exact_call_and_the_same_safe_text() {
    let (dir, policy) = setup(ASK_ALL);
    let seen = dir.path().join("approver-input.json");
    let approver = format!("cat > '{}'; echo deny", seen.display());
    let mut p = start(dir.path(), &policy, &["--approver", &approver]);
    p.initialize(json!({}));
    let name = fake_name();
    let args = json!({"content": "A".repeat(2100), "path": "/etc/cron.d/evil"});
    let out = p.call(&name, args.clone());
    assert!(text(&out).contains("ask_denied"), "{out}");
    let raw = std::fs::read_to_string(&seen).unwrap();
    // One line of JSON, every hidden character escaped in it.
    assert_eq!(raw.trim_end().lines().count(), 1, "{raw}");
    no_hidden_characters(&raw);
    let input: Value = serde_json::from_str(&raw).unwrap();
    // What the approver decides on is the exact call.
    assert_eq!(input["tool"], Value::from(name));
    assert_eq!(input["arguments"], args);
    // What it may show a person is the dialog's text.
    let message = input["message"].as_str().unwrap();
    assert!(message.contains("/etc/cron.d/evil"), "{message}");
    no_hidden_characters(message);
}

#[test]
fn results_are_shaped_for_the_model_and_a_clean_one_is_relayed_as_it_came() {
    let (dir, policy) = setup(ALLOW);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    let out = p.call("poison", json!({}));
    let result = &out["result"];
    // What the model reads; `_meta` (checked below) is kept as it came.
    let all = result["content"].to_string();
    for c in ['\u{202e}', '\u{200b}'] {
        assert!(!all.contains(c), "{c:?} in {all}");
    }
    assert!(
        !all.chars()
            .any(|c| ('\u{e0000}'..='\u{e007f}').contains(&c)),
        "tag characters in {all}"
    );
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 3, "{result}");
    assert_eq!(content[0]["text"], "safe txt.exe end");
    // The SVG became a placeholder; the PNG stayed as it was.
    assert_eq!(content[1]["type"], "text");
    assert!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .contains("image/svg+xml"),
        "{result}"
    );
    assert_eq!(
        content[2],
        json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
    );
    // `_meta` stays as the server sent it.
    assert_eq!(
        result["_meta"],
        json!({"ui/resourceUri": "ui://poison/app\u{200b}", "n": 1})
    );

    // A clean result: every key kept, in the server's order, nothing added.
    let out = p.call("clean", json!({}));
    assert_eq!(
        out["result"].to_string(),
        json!({"content": [{"type": "text", "text": "plain", "annotations": {"audience": ["user"]}}],
               "_meta": {"ui/resourceUri": "ui://clean/app"},
               "futureKey": {"b": 2, "a": 1}})
        .to_string()
    );

    // The size is capped: 200 KiB of text is cut, and the cut is said.
    let out = p.call("big", json!({}));
    let content = out["result"]["content"].as_array().unwrap();
    let total: usize = content
        .iter()
        .map(|b| b["text"].as_str().unwrap_or("").len())
        .sum();
    assert!(total <= 100 * 1024, "{total}");
    assert!(
        content
            .last()
            .unwrap()
            .get("text")
            .and_then(Value::as_str)
            .unwrap()
            .contains("cut"),
        "{:?}",
        content.last()
    );
    assert_eq!(p.close().code(), Some(0));

    // --no-shape: the result as the server sent it.
    let mut p = start(dir.path(), &policy, &["--no-shape"]);
    p.initialize(json!({}));
    let out = p.call("poison", json!({}));
    assert!(
        out["result"].to_string().contains('\u{202e}'),
        "{}",
        out["result"]
    );
    assert_eq!(out["result"]["content"][1]["mimeType"], "image/svg+xml");
}

#[test]
fn structured_content_stays_valid_against_the_output_schema_or_is_withheld() {
    let (dir, policy) = setup(ALLOW);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    p.request("tools/list", json!({}));
    let out = p.call("structured", json!({"which": "ok"}));
    assert_eq!(
        out["result"]["structuredContent"],
        json!({"note": "hi there", "code": "ab"}),
        "{out}"
    );
    assert_ne!(out["result"]["isError"], true, "{out}");
    // Stripping U+200B leaves "a", under the schema's minLength: withheld.
    let out = p.call("structured", json!({"which": "breaks"}));
    assert_eq!(out["result"]["isError"], true, "{out}");
    assert!(out["result"].get("structuredContent").is_none(), "{out}");
    let t = text(&out);
    assert!(t.contains("outputSchema") && t.contains("withheld"), "{t}");
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_governed_request_has_one_audit_line_whatever_refused_it() {
    let (dir, policy) = setup(ALLOW);
    let audit = dir.path().join("audit.jsonl");
    let script = dir.path().join("guard.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nif grep -q forbidden; then echo 'no' >&2; exit 2; fi\nexit 0\n",
    )
    .unwrap();
    let settings = dir.path().join("settings.json");
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__scripted__echo",
        "hooks": [{"type": "command", "command": format!("sh '{}'", script.display())}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let mut p = start(
        dir.path(),
        &policy,
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--hooks",
            settings.to_str().unwrap(),
        ],
    );
    p.initialize(json!({}));
    let over = "x".repeat(4 * 1024 * 1024 + 10);
    let answers = [
        p.call("read_file", json!({"path": "/srv/a"})),
        p.call("read_file", json!({"path": "/etc/passwd"})),
        // Over the 4 MiB bound of arguments: refused before any hook or policy.
        p.call("read_file", json!({"path": "/srv/a", "pad": over})),
        // A hook that denies.
        p.call("echo", json!({"word": "forbidden"})),
        p.call("secret", json!({})),
        p.call("nope", json!({})),
        // Arguments that are not an object.
        p.call("echo", json!([1, 2])),
    ];
    assert_eq!(p.close().code(), Some(0));
    let lines = audit_lines(&audit);
    let summary: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["decision"].as_str().unwrap(),
                l["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("allow", "allow_rule"),
            ("deny", "deny_rule"),
            ("deny", "invalid_arguments"),
            ("deny", "hook_denied"),
            ("deny", "hidden"),
            ("deny", "unknown_tool"),
            ("deny", "invalid_arguments"),
        ],
        "{lines:?}; answers {answers:?}"
    );
    assert_eq!(
        lines[3]["hook_id"].as_str().map(|h| !h.is_empty()),
        Some(true)
    );
    // Only the allowed call reached the server.
    assert_eq!(calls_reaching_server(dir.path()), 1);
}

#[test]
#[cfg(target_os = "linux")] // /dev/full
fn an_audit_that_cannot_be_written_refuses_the_call_and_sends_nothing() {
    let (dir, policy) = setup(ALLOW);
    let mut p = start(dir.path(), &policy, &["--audit", "/dev/full"]);
    p.initialize(json!({}));
    for _ in 0..3 {
        let out = p.call("read_file", json!({"path": "/srv/a"}));
        assert_eq!(out["result"]["isError"], true, "{out}");
        assert!(text(&out).contains("reason audit_failed"), "{out}");
    }
    assert_eq!(p.close().code(), Some(0));
    assert_eq!(calls_reaching_server(dir.path()), 0);
    assert!(p.stderr_text().contains("audit"), "{}", p.stderr_text());
}

#[test]
fn a_call_refused_before_it_is_served_has_its_audit_line_too() {
    let (dir, policy) = setup(ALLOW);
    let audit = dir.path().join("audit.jsonl");
    let mut p = start(dir.path(), &policy, &["--audit", audit.to_str().unwrap()]);
    p.initialize(json!({}));
    // A tools/call without an id: dropped, never served.
    p.send(json!({"jsonrpc": "2.0", "method": "tools/call",
                  "params": {"name": "echo", "arguments": {}}}));
    // An id still in flight: refused.
    p.send(json!({"jsonrpc": "2.0", "id": 500, "method": "tools/call",
                  "params": {"name": "slow", "arguments": {"seconds": 1}}}));
    p.send(json!({"jsonrpc": "2.0", "id": 500, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {}}}));
    let first = p.wait_for(|m| m["id"] == 500);
    let second = p.wait_for(|m| m["id"] == 500);
    assert!(
        first.get("error").is_some() || second.get("error").is_some(),
        "{first} {second}"
    );
    assert_eq!(p.close().code(), Some(0));
    let mut got: Vec<(String, String)> = audit_lines(&audit)
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        got,
        [
            s("echo", "duplicate_id"),
            s("echo", "not_a_request"),
            s("slow", "allow_rule")
        ]
    );
}
