//! `mcppol proxy` against a scripted stdio server (tests/fixtures/proxy),
//! driven over pipes as a host drives it. No network.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

/// Shared with `proxy_faults` and `proxy_load`.
pub(crate) mod harness;

use std::path::Path;
use std::time::Duration;

use harness::{server_log, text, Proxy};
use serde_json::{json, Value};

const POLICY: &str = r#"
policy scripted {
  default deny
  roots "/srv/work"
  tools { exclude "scripted/secret" }
  deny no_escape: "scripted/read_file" when args.path escapes "/srv"
  allow "scripted/read_file" when args.path inside "/srv"
  ask confirm: "scripted/echo" when args.ask == true
  allow "scripted/echo", "scripted/slow", "scripted/ask_roots", "scripted/ask_sampling",
    "scripted/change", "scripted/die", "scripted/secret"
}
"#;

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
    Proxy::start(dir, &args, &[])
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn calls_reaching_server(dir: &Path) -> Vec<String> {
    server_log(dir)
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lists_every_page_without_hidden_tools_and_governs_calls() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    let init = p.initialize(json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "scripted");
    let list = p.request("tools/list", json!({}));
    assert_eq!(
        names(&list),
        [
            "echo",
            "read_file",
            "slow",
            "ask_roots",
            "ask_sampling",
            "change",
            "die"
        ]
    );
    assert!(list["result"].get("nextCursor").is_none());

    let ok = p.call("read_file", json!({"path": "/srv/a.txt"}));
    assert_eq!(text(&ok), "contents of /srv/a.txt");
    let escape = p.call("read_file", json!({"path": "/srv/../etc/passwd"}));
    assert_eq!(escape["result"]["isError"], true);
    let t = text(&escape);
    assert!(
        t.contains("decision deny, reason deny_rule, rule no_escape"),
        "{t}"
    );

    // A hidden tool and one never listed: the same error but for the name.
    let hidden = p.call("secret", json!({}));
    let unknown = p.call("no_such_tool", json!({}));
    assert_eq!(hidden["error"]["code"], -32602);
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .unwrap()
            .replace("secret", "X"),
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .replace("no_such_tool", "X")
    );
    // Neither reached the server, nor did the escape.
    assert_eq!(calls_reaching_server(dir.path()), ["read_file"]);
    assert_eq!(p.close().code(), Some(0));
}

#[test]
fn an_ask_without_approver_is_denied_and_an_approver_command_is_honoured() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    let denied = p.call("echo", json!({"ask": true}));
    assert!(text(&denied).contains("reason no_approver"), "{denied}");
    drop(p);

    let seen = dir.path().join("approver-input.json");
    let approver = format!("cat > '{}'; echo allow_once", seen.display());
    let mut p = start(dir.path(), &policy, &["--approver", &approver]);
    p.initialize(json!({}));
    let allowed = p.call("echo", json!({"ask": true, "n": 1}));
    assert_eq!(text(&allowed), r#"{"ask": true, "n": 1}"#);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["server"], "scripted");
    assert_eq!(input["tool"], "echo");
    assert_eq!(input["arguments"], json!({"ask": true, "n": 1}));
    assert_eq!(input["rule_id"], "confirm");
    assert_eq!(input["reason"], "ask_rule");
    assert!(input["args_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    drop(p);

    for (answer, reason) in [
        ("echo deny", "ask_denied"),
        ("echo maybe", "ask_failed"),
        ("exit 1", "ask_failed"),
    ] {
        let mut p = start(dir.path(), &policy, &["--approver", answer]);
        p.initialize(json!({}));
        let out = p.call("echo", json!({"ask": true}));
        assert!(
            text(&out).contains(&format!("reason {reason}")),
            "{answer}: {out}"
        );
    }
}

#[test]
fn elicitation_asks_the_host_and_allow_always_records_a_grant() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"elicitation": {}}));
    p.send(json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"ask": true}}}));
    let ask = p.wait_for(|m| m["method"] == "elicitation/create");
    let message = ask["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("`scripted`") && message.contains("`echo`") && message.contains("confirm"),
        "{message}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["decision"]["enum"],
        json!(["allow_once", "allow_always", "deny"])
    );
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"decision": "allow_always"}}}));
    let out = p.wait_for(|m| m["id"] == 50);
    assert_eq!(text(&out), r#"{"ask": true}"#);
    // The grant settles the same call of that tool: not asked again.
    let again = p.call("echo", json!({"ask": true}));
    assert_eq!(text(&again), r#"{"ask": true}"#);

    // The grant is per tool and definition: other arguments are settled by
    // it too.
    let out = p.call("echo", json!({"ask": true, "other": 1}));
    assert_ne!(out["result"]["isError"], true, "{out}");
    drop(p);

    // A decline denies.

    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"elicitation": {}}));
    p.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"ask": true}}}));
    let ask = p.wait_for(|m| m["method"] == "elicitation/create");
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}));
    let out = p.wait_for(|m| m["id"] == 7);
    assert!(text(&out).contains("reason ask_denied"), "{out}");
}

#[test]
fn pinned_roots_narrow_what_the_host_gives_and_unpinned_pass_through() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"roots": {"listChanged": true}}));
    p.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask_roots", "arguments": {}}}));
    let ask = p.wait_for(|m| m["method"] == "roots/list");
    p.send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [
        {"uri": "file:///", "name": "everything"}, {"uri": "file:///etc", "name": "etc"}]}}),
    );
    let out = p.wait_for(|m| m["id"] == 9);
    let got: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(
        got["result"],
        json!({"roots": [{"uri": "file:///srv/work"}]})
    );
    assert!(
        p.stderr_text().contains("file:///etc"),
        "the drop is logged"
    );
    // An edit of the pinned roots is announced to the server.
    std::fs::write(&policy, POLICY.replace("/srv/work", "/srv/other")).unwrap();
    let mut told = false;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if server_log(dir.path())
            .iter()
            .any(|m| m["method"] == "notifications/roots/list_changed")
        {
            told = true;
            break;
        }
    }
    assert!(told, "{}", p.stderr_text());
    drop(p);

    let (dir, policy) = setup(&POLICY.replace("roots \"/srv/work\"", ""));
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"roots": {}}));
    p.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask_roots", "arguments": {}}}));
    let ask = p.wait_for(|m| m["method"] == "roots/list");
    let roots = json!({"roots": [{"uri": "file:///", "name": "everything"}]});
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": roots}));
    let out = p.wait_for(|m| m["id"] == 9);
    let got: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(got["result"], roots);
}

#[test]
fn everything_else_passes_through_with_ids_remapped_both_ways() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({"sampling": {}}));
    // A request of the server's to the host (sampling) under the proxy's id.
    p.send(json!({"jsonrpc": "2.0", "id": "h-1", "method": "tools/call", "params": {"name": "ask_sampling", "arguments": {}}}));
    let ask = p.wait_for(|m| m["method"] == "sampling/createMessage");
    assert_eq!(ask["params"]["maxTokens"], 5);
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}}));
    let out = p.wait_for(|m| m["id"] == "h-1");
    let got: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(got["result"]["model"], "m");
    assert_eq!(got["id"], 1000, "the server sees the id it chose");

    // Host requests the proxy does not govern, and a ping.
    assert_eq!(p.request("ping", json!({}))["result"], json!({}));
    let res = p.request("resources/list", json!({}));
    assert_eq!(res["result"]["resources"][0]["uri"], "mem://a");
    let missing = p.request("no/such", json!({}));
    assert_eq!(missing["error"]["code"], -32601);

    // Progress passes through; a cancellation reaches the server under its id.
    p.send(json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                  "params": {"name": "slow", "arguments": {"seconds": 3}, "_meta": {"progressToken": "tok"}}}));
    let progress = p.wait_for(|m| m["method"] == "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "tok");
    p.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77, "reason": "bored"}}));
    assert!(
        p.quiet_for(Duration::from_millis(3500)),
        "no answer to a cancelled request: {:?}",
        p.backlog
    );
    let log = server_log(dir.path());
    let slow_id = log
        .iter()
        .find(|m| m["params"]["name"] == "slow")
        .map(|m| m["id"].clone())
        .unwrap();
    let cancel = log
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancel["params"]["requestId"], slow_id);
    assert_eq!(cancel["params"]["reason"], "bored");
    // A notification from the host arrives untouched.
    assert!(log
        .iter()
        .any(|m| m["method"] == "notifications/initialized"));
}

#[test]
fn protocol_version_2025_06_18_and_resources_and_prompts_per_scope() {
    let (dir, policy) = setup(&POLICY.replace(
        "default deny",
        "default deny\n  scope tools, resources\n  allow resource \"scripted/mem://ok\"",
    ));
    let mut p = Proxy::start(
        dir.path(),
        &["--policy", &policy, "--server-id", "scripted"],
        &[("SCRIPTED_VERSION", "2025-06-18")],
    );
    let init = p.initialize(json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(text(&p.call("echo", json!({"a": 1}))), r#"{"a": 1}"#);
    let ok = p.request("resources/read", json!({"uri": "mem://ok"}));
    assert_eq!(ok["result"]["contents"][0]["text"], "resource mem://ok");
    let no = p.request("resources/read", json!({"uri": "mem://other"}));
    assert_eq!(no["error"]["code"], -32001);
    assert_eq!(no["error"]["data"]["reason"], "no_rule");
    // Prompts are out of the policy's scope: they pass.
    let prompt = p.request("prompts/get", json!({"name": "hello"}));
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"],
        "prompt hello"
    );
}

#[test]
fn editing_the_policy_changes_the_next_decision_and_a_broken_edit_changes_nothing() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    assert_eq!(text(&p.call("echo", json!({}))), "{}");
    std::fs::write(
        &policy,
        POLICY.replace(
            "default deny",
            "default deny\n  deny stop_echo: \"scripted/echo\"",
        ),
    )
    .unwrap();
    let mut denied = false;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if text(&p.call("echo", json!({}))).contains("rule stop_echo") {
            denied = true;
            break;
        }
    }
    assert!(
        denied,
        "the edit took no effect; stderr:\n{}",
        p.stderr_text()
    );
    std::fs::write(&policy, "policy scripted { deny oops: }").unwrap();
    let mut logged = false;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if p.stderr_text().contains("mcppol::parse") {
            logged = true;
            break;
        }
    }
    assert!(
        logged,
        "the broken edit is logged with its code:\n{}",
        p.stderr_text()
    );
    assert!(text(&p.call("echo", json!({}))).contains("rule stop_echo"));
}

#[test]
fn a_lock_with_another_fingerprint_makes_the_tool_definition_changed() {
    let (dir, policy) = setup(&POLICY.replace("default deny", "default deny\n  pin_tools on"));
    let lock = dir.path().join("scripted.lock");
    let fp = format!("sha256:{}", "0".repeat(64));
    std::fs::write(
        &lock,
        json!({"version": 1, "tools": {"scripted/echo": fp}}).to_string(),
    )
    .unwrap();
    let mut p = start(dir.path(), &policy, &["--lock", lock.to_str().unwrap()]);
    p.initialize(json!({}));
    let out = p.call("echo", json!({}));
    assert!(
        text(&out).contains("definition_changed"),
        "{out}; {}",
        p.stderr_text()
    );
}

#[test]
fn the_audit_file_has_a_line_per_decision_and_no_argument_values() {
    let (dir, policy) = setup(POLICY);
    let audit = dir.path().join("audit.jsonl");
    let mut p = start(dir.path(), &policy, &["--audit", audit.to_str().unwrap()]);
    p.initialize(json!({}));
    p.call("read_file", json!({"path": "/srv/topsecret-value.txt"}));
    p.call("read_file", json!({"path": "/etc/topsecret-value"}));
    p.call("secret", json!({"path": "topsecret-value"}));
    p.call("nope", json!({}));
    p.call("echo", json!({"ask": true}));
    p.close();
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(!text.contains("topsecret"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["decision"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        summary,
        [
            s("read_file", "allow", "allow_rule"),
            s("read_file", "deny", "deny_rule"),
            s("secret", "deny", "hidden"),
            s("nope", "deny", "unknown_tool"),
            s("echo", "deny", "no_approver"),
        ]
    );
    for l in &lines {
        for key in [
            "time",
            "server",
            "kind",
            "name",
            "decision",
            "source",
            "reason",
            "rule_id",
            "args_digest",
        ] {
            assert!(l.get(key).is_some(), "{key} missing in {l}");
        }
        assert!(l["args_digest"].as_str().unwrap().starts_with("sha256:"));
    }
    assert_eq!(lines[1]["rule_id"], "no_escape");
}

#[test]
fn a_changed_listing_is_listed_again_and_the_notification_passes() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    p.request("tools/list", json!({}));
    p.call("change", json!({}));
    p.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    // The new description is not shown: the model reads the approved one.
    let list = p.request("tools/list", json!({}));
    assert_eq!(list["result"]["tools"][0]["description"], "echoes");
    let mut logged = false;
    for _ in 0..50 {
        if p.stderr_text().contains("definition changed") {
            logged = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(logged, "{}", p.stderr_text());
}

#[test]
fn a_dying_server_fails_pending_requests_and_its_status_is_the_proxys() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &[]);
    p.initialize(json!({}));
    p.send(json!({"jsonrpc": "2.0", "id": 1000, "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 30}}}));
    std::thread::sleep(Duration::from_millis(300));
    let out = p.call("die", json!({}));
    assert_eq!(out["error"]["code"], -32603, "{out}");
    let slow = p.wait_for(|m| m["id"] == 1000);
    assert_eq!(slow["error"]["code"], -32603, "{slow}");
    assert_eq!(p.close().code(), Some(3));
}

#[test]
fn lines_over_the_bound_and_bad_json_are_refused_and_the_session_goes_on() {
    let (dir, policy) = setup(POLICY);
    let mut p = start(dir.path(), &policy, &["--max-line-bytes", "2000"]);
    p.initialize(json!({}));
    p.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(3000)
    ));
    let e = p.recv();
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    p.send_raw("{not json");
    assert_eq!(p.recv()["error"]["code"], -32700);
    assert_eq!(p.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn usage_errors_before_the_server_starts() {
    let (dir, policy) = setup(POLICY);
    let bin = crate::common::MCPPOL;
    let out = std::process::Command::new(bin)
        .args([
            "proxy",
            "--policy",
            &policy,
            "--server-id",
            "a/b",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a server id"));
    let broken = dir.path().join("broken.mcppol");
    std::fs::write(&broken, "policy x { deny }").unwrap();
    let out = std::process::Command::new(bin)
        .args([
            "proxy",
            "--policy",
            broken.to_str().unwrap(),
            "--server-id",
            "x",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = std::process::Command::new(bin)
        .args([
            "proxy",
            "--policy",
            &policy,
            "--server-id",
            "x",
            "--",
            "/no/such/server",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn a_claude_style_command_hook_runs_in_the_proxy_and_exit_2_denies_with_its_stderr() {
    let (dir, policy) = setup(POLICY);
    let script = dir.path().join("guard.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nif grep -q forbidden; then echo 'echo is off limits today' >&2; exit 2; fi\nexit 0\n",
    )
    .unwrap();
    let settings = dir.path().join("settings.json");
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__scripted__echo",
        "hooks": [{"type": "command", "command": format!("sh '{}'", script.display())}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let mut p = start(
        dir.path(),
        &policy,
        &["--hooks", settings.to_str().unwrap()],
    );
    p.initialize(json!({}));
    let denied = p.call("echo", json!({"word": "forbidden"}));
    let t = text(&denied);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(
        t.contains("reason hook_denied") && t.contains("echo is off limits today"),
        "{t}"
    );
    assert_eq!(
        text(&p.call("echo", json!({"word": "fine"}))),
        r#"{"word": "fine"}"#
    );
    // The denied call never reached the server.
    assert_eq!(calls_reaching_server(dir.path()), ["echo"]);

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"hooks": {"Stop": []}}"#).unwrap();
    let out = std::process::Command::new(crate::common::MCPPOL)
        .args([
            "proxy",
            "--policy",
            &policy,
            "--server-id",
            "scripted",
            "--hooks",
        ])
        .arg(&broken)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--hooks"));
}

#[test]
#[cfg(target_os = "linux")] // reads /proc
fn a_server_that_ignores_the_closed_input_is_killed_with_its_group_after_the_grace() {
    let (dir, policy) = setup(POLICY);
    let pidfile = dir.path().join("bg.pid");
    // Ignores its stdin closing, and leaves a background process behind.
    let script = format!(
        "sleep 300 & echo $! > '{}'; while true; do sleep 1; done",
        pidfile.display()
    );
    let mut cmd = std::process::Command::new(crate::common::MCPPOL);
    cmd.args([
        "proxy",
        "--policy",
        &policy,
        "--server-id",
        "scripted",
        "--grace",
        "300ms",
    ])
    .args(["--", "sh", "-c", &script])
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::fs::File::create(dir.path().join("proxy.stderr")).unwrap());
    let mut p = Proxy::spawn(cmd, dir.path().join("proxy.stderr"));
    for _ in 0..100 {
        if pidfile.exists() && !std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let bg = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    assert!(Path::new(&format!("/proc/{bg}")).exists());
    let started = std::time::Instant::now();
    let status = p.close();
    assert_eq!(status.code(), Some(137), "{}", p.stderr_text());
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(p.stderr_text().contains("did not exit in time"));
    // Nothing is left running: the background process went with the group.
    let mut gone = false;
    for _ in 0..50 {
        let state = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for its (re)parent to reap it.
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone, "the server's background process is still running");
}

#[test]
fn a_request_sent_without_an_id_never_reaches_the_server() {
    let (dir, policy) = setup(POLICY);
    let mut proxy = start(dir.path(), &policy, &[]);
    proxy.initialize(json!({}));
    // A `tools/call` without an id would bypass the pipeline: dropped.
    proxy.send(json!({"jsonrpc": "2.0", "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "/etc/passwd"}}}));
    // A real notification still passes; a governed call after it is the
    // marker that the server has read everything sent before.
    proxy.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let answer = proxy.call("echo", json!({"text": "after"}));
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(calls_reaching_server(dir.path()), ["echo"]);
    assert!(server_log(dir.path())
        .iter()
        .any(|m| m["method"] == "notifications/roots/list_changed"));
    assert!(proxy.stderr_text().contains("request without an id"));
}
