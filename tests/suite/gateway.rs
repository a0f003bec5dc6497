//! `mcppol gateway --stdio` in front of two scripted stdio servers
//! (tests/fixtures/proxy/scripted_server.py, as servers `a` and `b`),
//! driven over pipes as a host drives it. No network.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::proxy::harness::{scripted_server, text, Proxy};

const POLICY: &str = r#"
policy gw {
  default deny
  tools { exclude "a/secret" }
  ask confirm: "a/echo" when args.ask == true
  deny tainted_write: "b/echo" when tainted
  allow "a/*", "b/*"
}
"#;

/// A folder with the policy, and a servers file naming `a` and `b` (each
/// the scripted server, logging what it gets to `a.log` / `b.log`), plus
/// `extra` servers (id, the servers file's entry).
fn setup(extra: &[(&str, Value)]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gw.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    let mut servers = serde_json::Map::new();
    for id in ["a", "b"] {
        servers.insert(
            id.into(),
            json!({"command": "python3", "args": [scripted_server()],
                   "env": {"SCRIPTED_LOG": dir.path().join(format!("{id}.log"))}}),
        );
    }
    for (id, entry) in extra {
        servers.insert((*id).into(), entry.clone());
    }
    let file = dir.path().join("servers.json");
    std::fs::write(&file, json!({ "mcpServers": servers }).to_string()).unwrap();
    (dir, policy, file)
}

fn start(dir: &Path, policy: &Path, servers: &Path, extra: &[&str]) -> Proxy {
    let stderr = dir.join("gateway.stderr");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.arg("gateway")
        .arg("--policy")
        .arg(policy)
        .arg("--servers")
        .arg(servers)
        .arg("--stdio")
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    Proxy::spawn(cmd, stderr)
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn log_of(dir: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(format!("{id}.log")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn calls_reaching(dir: &Path, id: &str) -> Vec<String> {
    log_of(dir, id)
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn one_namespaced_listing_each_call_to_its_own_server_hidden_equals_unknown() {
    let (dir, policy, servers) = setup(&[]);
    let audit = dir.path().join("audit.jsonl");
    let mut g = start(
        dir.path(),
        &policy,
        &servers,
        &["--audit", audit.to_str().unwrap()],
    );
    let init = g.initialize(json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "mcppol-gateway");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let tools = names(&g.request("tools/list", json!({})));
    let own = [
        "echo",
        "read_file",
        "slow",
        "ask_roots",
        "ask_sampling",
        "change",
        "die",
    ];
    let mut expected: Vec<String> = own.iter().map(|t| format!("a__{t}")).collect();
    // `a/secret` is hidden; `b/secret` is not.
    expected.extend(
        [
            "echo",
            "read_file",
            "secret",
            "slow",
            "ask_roots",
            "ask_sampling",
            "change",
            "die",
        ]
        .iter()
        .map(|t| format!("b__{t}")),
    );
    assert_eq!(tools, expected);

    // A call reaches its own server under the server's own name, and the
    // answer is the server's.
    let echoed = g.call("a__echo", json!({"x": 1}));
    assert_eq!(text(&echoed), r#"{"x": 1}"#);
    assert_eq!(calls_reaching(dir.path(), "a"), ["echo"]);
    assert!(calls_reaching(dir.path(), "b").is_empty());

    // Hidden, unknown on its server, and an unknown server: one answer
    // but for the name, and nothing reaches a server.
    let hidden = g.call("a__secret", json!({}));
    let unknown = g.call("a__nothing", json!({}));
    let no_server = g.call("zz__echo", json!({}));
    let no_prefix = g.call("echo", json!({}));
    for (answer, name) in [
        (&hidden, "a__secret"),
        (&unknown, "a__nothing"),
        (&no_server, "zz__echo"),
        (&no_prefix, "echo"),
    ] {
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(
            answer["error"]["message"],
            format!("Unknown tool: {name}"),
            "{answer}"
        );
    }
    assert_eq!(calls_reaching(dir.path(), "a"), ["echo"]);
    assert!(g.close().success());

    // One audit line per governed request, each naming its server.
    let lines = audit_lines(&audit);
    let seen: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["server"].as_str().unwrap().to_string(),
                l["name"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = |s: &str, n: &str, r: &str| (s.to_string(), n.to_string(), r.to_string());
    assert_eq!(
        seen,
        [
            expect("a", "echo", "allow_rule"),
            expect("a", "secret", "hidden"),
            expect("a", "nothing", "unknown_tool"),
            expect("", "zz__echo", "unknown_tool"),
            expect("", "echo", "unknown_tool"),
        ]
    );
}

#[test]
fn a_result_from_one_server_taints_the_session_for_the_others() {
    let (dir, policy, servers) = setup(&[]);
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({}));
    // Nothing in the context yet: b's echo is allowed, and b's own output
    // does not taint calls to b.
    assert_eq!(text(&g.call("b__echo", json!({"n": 1}))), r#"{"n": 1}"#);
    assert_eq!(text(&g.call("b__echo", json!({"n": 2}))), r#"{"n": 2}"#);
    // A result of a's: now b's echo is denied by `when tainted`, though the
    // host passed no taint, and it never reaches b.
    assert_eq!(
        text(&g.call("a__read_file", json!({"path": "/srv/x"}))),
        "contents of /srv/x"
    );
    let denied = g.call("b__echo", json!({"n": 3}));
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(text(&denied).contains("rule tainted_write"), "{denied}");
    assert_eq!(calls_reaching(dir.path(), "b"), ["echo", "echo"]);
    // Calls to a are not tainted by a's own output.
    assert_eq!(text(&g.call("a__echo", json!({}))), "{}");
    assert!(g.close().success());
}

#[test]
fn a_failed_server_fails_only_its_own_calls_and_comes_back() {
    let missing = json!({"command": "/nonexistent/mcp-server"});
    let (dir, policy, servers) = setup(&[("gone", missing)]);
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({}));
    // A server that cannot start: its calls fail naming it, the others'
    // work, and its tools are not listed.
    let gone = g.call("gone__anything", json!({}));
    assert_eq!(gone["error"]["code"], -32603, "{gone}");
    let message = gone["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`gone`") && message.contains("cannot start"),
        "{message}"
    );
    assert!(!names(&g.request("tools/list", json!({})))
        .iter()
        .any(|t| t.starts_with("gone__")));

    // A server that exits mid-session: the call it was serving fails
    // naming it, the host is told the listing changed, a's calls go on.
    let died = g.call("b__die", json!({}));
    assert_eq!(died["error"]["code"], -32603, "{died}");
    assert!(
        died["error"]["message"].as_str().unwrap().contains("`b`"),
        "{died}"
    );
    g.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    assert_eq!(
        text(&g.call("a__echo", json!({"still": true}))),
        r#"{"still": true}"#
    );
    // It is started again (backoff 0.5 s): its tools come back, and the
    // host is told.
    let mut back = false;
    for _ in 0..100 {
        if names(&g.request("tools/list", json!({})))
            .iter()
            .any(|t| t == "b__echo")
        {
            back = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(back, "b did not come back; stderr:\n{}", g.stderr_text());
    // (`b/echo` is denied now: a's output is in the context.)
    assert_eq!(
        text(&g.call("b__read_file", json!({"path": "/srv/y"}))),
        "contents of /srv/y"
    );
    assert!(g.close().success());
    let stderr = std::fs::read_to_string(dir.path().join("gateway.stderr")).unwrap();
    assert!(
        stderr.contains("the server failed") && stderr.contains("server=b"),
        "{stderr}"
    );
}

#[test]
fn asks_go_to_the_approver_with_the_server_id_and_its_own_tool_name() {
    let (dir, policy, servers) = setup(&[]);
    let seen = dir.path().join("approver.json");
    let approver = format!("cat > {}; echo allow_once", seen.display());
    let mut g = start(dir.path(), &policy, &servers, &["--approver", &approver]);
    g.initialize(json!({}));
    let allowed = g.call("a__echo", json!({"ask": true}));
    assert_eq!(text(&allowed), r#"{"ask": true}"#, "{allowed}");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        (input["server"].as_str(), input["tool"].as_str()),
        (Some("a"), Some("echo"))
    );
    assert_eq!(input["rule_id"], "confirm");
    assert!(g.close().success());
}

#[test]
fn without_an_approver_an_ask_is_elicited_from_a_host_that_declared_it() {
    let (dir, policy, servers) = setup(&[]);
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({"elicitation": {}}));
    let id = 77;
    g.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                  "params": {"name": "a__echo", "arguments": {"ask": true}}}));
    let ask = g.wait_for(|m| m["method"] == "elicitation/create");
    assert!(
        ask["params"]["message"].as_str().unwrap().contains("echo"),
        "{ask}"
    );
    g.send(json!({"jsonrpc": "2.0", "id": ask["id"],
                  "result": {"action": "accept", "content": {"decision": "deny"}}}));
    let answer = g.wait_for(|m| m["id"] == id);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(calls_reaching(dir.path(), "a").is_empty());
    assert!(g.close().success());
}

#[test]
fn resources_and_prompts_are_routed_and_a_uri_two_servers_list_is_refused() {
    let (dir, policy, servers) = setup(&[]);
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({}));
    // Both scripted servers list `mem://a`: which one answers is not the
    // gateway's to guess.
    let listed = g.request("resources/list", json!({}));
    assert_eq!(listed["result"]["resources"].as_array().unwrap().len(), 2);
    let read = g.request("resources/read", json!({"uri": "mem://a"}));
    assert_eq!(read["error"]["code"], -32602, "{read}");
    assert!(
        read["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ambiguous"),
        "{read}"
    );
    let unknown = g.request("resources/read", json!({"uri": "mem://nobody"}));
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    // A prompt goes to its server under its own name.
    let prompt = g.request("prompts/get", json!({"name": "b__greet"}));
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"], "prompt greet",
        "{prompt}"
    );
    let nowhere = g.request("prompts/get", json!({"name": "zz__greet"}));
    assert_eq!(nowhere["error"]["message"], "Unknown prompt: zz__greet");
    assert!(g.close().success());
}

#[test]
fn a_server_id_holding_the_separator_is_a_usage_error() {
    let entry = json!({"command": "python3", "args": [scripted_server()]});
    let (dir, policy, servers) = setup(&[("my__fs", entry)]);
    let out = Command::new(crate::common::MCPPOL)
        .arg("gateway")
        .arg("--policy")
        .arg(&policy)
        .arg("--servers")
        .arg(&servers)
        .arg("--stdio")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`my__fs` holds the separator `__`"),
        "{stderr}"
    );
    drop(dir);
}

#[test]
fn roots_are_pinned_an_edit_reloads_every_server_and_list_changed_reaches_the_host() {
    let (dir, policy, servers) = setup(&[]);
    std::fs::write(
        &policy,
        POLICY.replace("default deny", "default deny\n  roots \"/srv/work\""),
    )
    .unwrap();
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({"roots": {"listChanged": true}}));
    // A server's `roots/list` goes to the host and comes back narrowed to
    // the pinned roots.
    g.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                  "params": {"name": "b__ask_roots", "arguments": {}}}));
    let ask = g.wait_for(|m| m["method"] == "roots/list");
    g.send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [
        {"uri": "file:///", "name": "everything"}, {"uri": "file:///etc", "name": "etc"}]}}),
    );
    let out = g.wait_for(|m| m["id"] == 9);
    let got: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(
        got["result"],
        json!({"roots": [{"uri": "file:///srv/work"}]})
    );

    // One server's `list_changed` reaches the host.
    assert_eq!(text(&g.call("a__change", json!({}))), "changed");
    g.wait_for(|m| m["method"] == "notifications/tools/list_changed");

    // An edit of the policy changes every server's decisions at once.
    std::fs::write(
        &policy,
        POLICY.replace(
            "default deny",
            "default deny\n  deny off: \"a/read_file\", \"b/read_file\"",
        ),
    )
    .unwrap();
    let mut denied = (false, false);
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        let a = g.call("a__read_file", json!({"path": "/srv/x"}));
        let b = g.call("b__read_file", json!({"path": "/srv/x"}));
        denied = (
            a["result"]["isError"] == true,
            b["result"]["isError"] == true,
        );
        if denied == (true, true) {
            break;
        }
    }
    assert_eq!(denied, (true, true), "{}", g.stderr_text());
    assert!(g.close().success());
}

#[test]
fn a_signal_ends_every_server_with_the_gateway() {
    // Each server writes its pid first, so the test can see it gone.
    let pid_of = |dir: &Path, id: &str| dir.join(format!("{id}.pid"));
    let tmp = tempfile::tempdir().unwrap();
    let wrapped = |id: &str| {
        json!({"command": "sh", "args": ["-c", format!("echo $$$$ > '{}'; exec python3 '{}'",
            pid_of(tmp.path(), id).display(), scripted_server().display())]})
    };
    let (dir, policy, servers) = setup(&[("c", wrapped("c")), ("d", wrapped("d"))]);
    let mut g = start(dir.path(), &policy, &servers, &[]);
    g.initialize(json!({}));
    let pids: Vec<String> = ["c", "d"]
        .iter()
        .map(|id| {
            std::fs::read_to_string(pid_of(tmp.path(), id))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    let alive = |pid: &str| Path::new(&format!("/proc/{pid}")).exists();
    assert!(pids.iter().all(|p| alive(p)));
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(g.child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = g.wait_exit(Duration::from_secs(10));
    assert_eq!(exit.code(), Some(128 + 15), "{}", g.stderr_text());
    for pid in &pids {
        // Reaped by the gateway: no process, not even a zombie, is left.
        assert!(!alive(pid), "server {pid} outlived the gateway");
    }
}
