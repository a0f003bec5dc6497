//! One outcome, two mappings: through the real `mcppol proxy` binary, a
//! hidden, an unknown, a hook-refused, an approved and an audit-failed
//! call, each checked for its audit line and the host's answer coming from
//! the same outcome (the same decision, reason, rule and hook in both, the
//! answer in the renderer's words for it).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use serde_json::{json, Value};

use crate::proxy::harness::{server_log, text, Proxy};

const POLICY: &str = r#"
policy scripted {
  default deny
  tools { exclude "scripted/secret" }
  ask confirm: "scripted/echo" when args.ask == true
  allow "scripted/echo", "scripted/read_file", "scripted/secret"
}
"#;

/// The words the proxy answers a refused tool call with, made of the
/// fields of its audit line (`detail`: what the hook said).
fn refusal_words(line: &Value, detail: Option<&str>) -> String {
    let mut words = format!(
        "mcppol refused this call: decision {}, reason {}",
        line["decision"].as_str().unwrap(),
        line["reason"].as_str().unwrap()
    );
    if let Some(rule) = line["rule_id"].as_str() {
        words.push_str(&format!(", rule {rule}"));
    }
    if let Some(hook) = line["hook_id"].as_str() {
        words.push_str(&format!(", hook {hook}"));
    }
    words.push('.');
    if let Some(detail) = detail {
        words.push_str(&format!(" {detail}"));
    }
    words.push_str(" Do not retry the same call; a person can change the policy.");
    words
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn start(dir: &Path, extra: &[&str]) -> Proxy {
    let policy = dir.join("scripted.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let mut args = vec![
        "--policy",
        policy.to_str().unwrap(),
        "--server-id",
        "scripted",
    ];
    args.extend_from_slice(extra);
    Proxy::start(dir, &args, &[])
}

#[test]
fn the_audit_line_and_the_answer_map_one_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let settings = dir.path().join("settings.json");
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__scripted__read_file",
        "hooks": [{"type": "command", "command": "cat >/dev/null; echo 'no reads today' >&2; exit 2"}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let mut p = start(
        dir.path(),
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--hooks",
            settings.to_str().unwrap(),
            "--approver",
            "cat >/dev/null; echo allow_once",
        ],
    );
    p.initialize(json!({}));
    let hidden = p.call("secret", json!({}));
    let unknown = p.call("nope", json!({}));
    let hooked = p.call("read_file", json!({"path": "/srv/a"}));
    let approved = p.call("echo", json!({"ask": true}));
    p.close();
    let lines = audit_lines(&audit);
    assert_eq!(lines.len(), 4, "{lines:?}");
    let fields = |l: &Value| {
        let f = |k: &str| l[k].as_str().map(String::from);
        (
            f("name"),
            f("decision"),
            f("source"),
            f("reason"),
            f("rule_id"),
            f("hook_id"),
            f("approval"),
        )
    };
    let s = |v: &str| Some(v.to_string());

    // Hidden and unknown: one answer for both, the renderer's words for a
    // tool the host may not see; the audit says which it was.
    assert_eq!(
        fields(&lines[0]),
        (
            s("secret"),
            s("deny"),
            s("visibility"),
            s("hidden"),
            None,
            None,
            s("none")
        )
    );
    assert_eq!(
        fields(&lines[1]),
        (
            s("nope"),
            s("deny"),
            s("request"),
            s("unknown_tool"),
            None,
            None,
            s("none")
        )
    );
    for (answer, line) in [(&hidden, &lines[0]), (&unknown, &lines[1])] {
        let name = line["name"].as_str().unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(answer["error"]["message"], format!("Unknown tool: {name}"));
    }

    // Refused by a hook: the same decision, reason and hook in both.
    assert_eq!(
        fields(&lines[2]),
        (
            s("read_file"),
            s("deny"),
            s("hook"),
            s("hook_denied"),
            None,
            s("claude:PreToolUse[0].hooks[0]"),
            s("none")
        )
    );
    assert_eq!(hooked["result"]["isError"], true, "{hooked}");
    assert_eq!(
        text(&hooked),
        refusal_words(&lines[2], Some("no reads today"))
    );

    // Asked and approved once: allowed by the ask rule, and the server's
    // own answer comes back.
    assert_eq!(
        fields(&lines[3]),
        (
            s("echo"),
            s("allow"),
            s("ask"),
            s("ask_rule"),
            s("confirm"),
            None,
            s("once")
        )
    );
    assert_eq!(text(&approved), r#"{"ask": true}"#);
    assert!(
        approved["result"].get("isError").is_none_or(|e| e == false),
        "{approved}"
    );

    // Only the approved call reached the server.
    let sent: Vec<Value> = server_log(dir.path())
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].clone())
        .collect();
    assert_eq!(sent, [json!("echo")]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_call_whose_audit_line_cannot_be_written_is_refused_in_the_renderers_words() {
    let dir = tempfile::tempdir().unwrap();
    // Every write to /dev/full fails (ENOSPC), for root too.
    let mut p = start(dir.path(), &["--audit", "/dev/full"]);
    p.initialize(json!({}));
    let refused = p.call("echo", json!({"word": "hi"}));
    let hidden = p.call("secret", json!({}));
    p.close();
    // The outcome the audit could not take: deny, audit_failed, no rule
    // (the policy's allow is not what decided).
    let outcome =
        json!({"decision": "deny", "reason": "audit_failed", "rule_id": null, "hook_id": null});
    for answer in [&refused, &hidden] {
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(text(answer), refusal_words(&outcome, None));
    }
    assert!(
        p.stderr_text().contains("writing the audit file failed"),
        "{}",
        p.stderr_text()
    );
    // Nothing that was not audited reached the server.
    assert!(server_log(dir.path())
        .iter()
        .all(|m| m["method"] != "tools/call"));
}
