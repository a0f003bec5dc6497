//! End to end: the real `@modelcontextprotocol/server-filesystem` from npm
//! behind `mcppol proxy`, driven by the official MCP Python SDK client
//! (`tests/e2e/sdk_host.py`). `.ci/e2e-deps` installs both into `.e2e/`.
//! Without `.e2e/` the tests skip with a message, unless `CI` is set:
//! then missing dependencies fail.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The SDK's Python and the server's entry point, or `None` (skip).
fn deps() -> Option<(PathBuf, PathBuf)> {
    let python = root().join(".e2e/venv/bin/python");
    let server =
        root().join(".e2e/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if python.exists() && server.exists() {
        return Some((python, server));
    }
    if std::env::var_os("CI").is_some() {
        panic!("the end-to-end dependencies are missing under CI: run .ci/e2e-deps");
    }
    eprintln!(
        "skipped: the end-to-end dependencies are not installed (.e2e/ is absent); run .ci/e2e-deps"
    );
    None
}

/// A folder with `sandbox/hello.txt` and `outside/secret.txt`.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sandbox")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("sandbox/hello.txt"), "hello\n").unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "secret\n").unwrap();
        World { dir }
    }

    fn path(&self, rel: &str) -> String {
        // The server resolves symlinks (macOS /tmp): compare real paths.
        let p = self.dir.path().join(rel);
        std::fs::canonicalize(&p)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("proxy.stderr")).unwrap_or_default()
    }

    /// Writes the policy (`SANDBOX` replaced) and runs one scenario.
    fn run(&self, scenario: &str, policy: &str, extra: Value) -> Option<Value> {
        let (python, server) = deps()?;
        let policy_file = self.dir.path().join("fs.mcppol");
        std::fs::write(
            &policy_file,
            policy.replace("SANDBOX", &self.path("sandbox")),
        )
        .unwrap();
        let mut cfg = json!({
            "mcppol": crate::common::MCPPOL,
            "server_js": server,
            "policy": policy_file,
            "sandbox": self.path("sandbox"),
            "outside": self.path("outside"),
            "stderr": self.dir.path().join("proxy.stderr"),
        });
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        let out = Command::new(python)
            .arg(root().join("tests/e2e/sdk_host.py"))
            .arg(scenario)
            .arg(cfg.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the SDK host failed: {}\nproxy stderr:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.stderr()
        );
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }
}

const POLICY: &str = r#"
policy fs {
  default deny
  trusted "fs"
  tools { exclude "fs/move_file" }
  deny outside: "fs/*" when args.path escapes "SANDBOX"
  ask changes: "fs/write_file"
  allow "fs/read_text_file" when args.path inside "SANDBOX"
  allow "fs/list_allowed_directories"
}
"#;

#[test]
fn hidden_tools_reads_escapes_and_an_ask_without_approver() {
    let w = World::new();
    let audit = w.dir.path().join("audit.jsonl");
    let Some(r) = w.run("basics", POLICY, json!({"proxy_args": ["--audit", audit]})) else {
        return;
    };
    assert_eq!(r["protocol_version"], "2025-11-25");
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_text_file") && !tools.contains(&"move_file"),
        "{tools:?}"
    );
    // A hidden tool gets exactly the error of a tool that does not exist.
    assert_eq!(r["hidden"]["rpc_error"]["code"], -32602);
    assert_eq!(
        r["hidden"]["rpc_error"]["message"]
            .as_str()
            .unwrap()
            .replace("move_file", "X"),
        r["unknown"]["rpc_error"]["message"]
            .as_str()
            .unwrap()
            .replace("no_such_tool", "X"),
    );
    assert_eq!(r["read"], json!({"is_error": false, "text": "hello\n"}));
    assert_eq!(r["escape"]["is_error"], true);
    assert!(
        r["escape"]["text"]
            .as_str()
            .unwrap()
            .contains("reason deny_rule, rule outside"),
        "{r}"
    );
    assert!(
        r["write"]["text"]
            .as_str()
            .unwrap()
            .contains("reason no_approver"),
        "{r}"
    );
    assert!(!Path::new(&w.path("sandbox")).join("new.txt").exists());

    // The audit file: a line per decision, no argument values.
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(
        !text.contains("hello.txt") && !text.contains("secret"),
        "{text}"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap(),
                l["decision"].as_str().unwrap(),
                l["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("move_file", "deny", "hidden"),
            ("no_such_tool", "deny", "unknown_tool"),
            ("read_text_file", "allow", "allow_rule"),
            ("read_text_file", "deny", "deny_rule"),
            ("write_file", "deny", "no_approver"),
        ]
    );
}

#[test]
fn an_approver_commands_answer_is_honoured() {
    let w = World::new();
    let Some(r) = w.run(
        "write",
        POLICY,
        json!({"proxy_args": ["--approver", "cat >/dev/null; echo allow_once"]}),
    ) else {
        return;
    };
    assert_eq!(r["write"]["is_error"], false, "{r}");
    assert_eq!(
        std::fs::read_to_string(Path::new(&w.path("sandbox")).join("new.txt")).unwrap(),
        "written"
    );

    let w = World::new();
    let r = w
        .run(
            "write",
            POLICY,
            json!({"proxy_args": ["--approver", "echo deny"]}),
        )
        .unwrap();
    assert!(
        r["write"]["text"]
            .as_str()
            .unwrap()
            .contains("reason ask_denied"),
        "{r}"
    );
    assert!(!Path::new(&w.path("sandbox")).join("new.txt").exists());
}

#[test]
fn an_elicitation_answer_is_honoured() {
    let w = World::new();
    let Some(r) = w.run("write", POLICY, json!({"elicit": "allow_once"})) else {
        return;
    };
    assert_eq!(r["write"]["is_error"], false, "{r}");
    let asked = r["asked"][0].as_str().unwrap();
    assert!(
        asked.contains("`fs`") && asked.contains("`write_file`") && asked.contains("changes"),
        "{asked}"
    );
    assert!(Path::new(&w.path("sandbox")).join("new.txt").exists());

    let w = World::new();
    let r = w
        .run("write", POLICY, json!({"elicit": "decline"}))
        .unwrap();
    assert!(
        r["write"]["text"]
            .as_str()
            .unwrap()
            .contains("reason ask_denied"),
        "{r}"
    );
    assert!(!Path::new(&w.path("sandbox")).join("new.txt").exists());
}

#[test]
fn a_wider_root_from_the_host_does_not_widen_the_server_when_roots_are_pinned() {
    // Policy allows reads anywhere: only the server's own roots fence them.
    let open = r#"
policy fs {
  default deny
  allow "fs/read_text_file", "fs/list_allowed_directories"
}
"#;
    let pinned = open.replace("default deny", "default deny\n  roots \"SANDBOX\"");
    let w = World::new();
    let wide = json!({"roots": [format!("file://{}", w.path(""))]});
    let Some(r) = w.run("roots", &pinned, wide.clone()) else {
        return;
    };
    assert!(
        r["allowed"]["text"]
            .as_str()
            .unwrap()
            .ends_with(&w.path("sandbox")),
        "{r}"
    );
    assert_eq!(r["outside"]["is_error"], true, "{r}");
    assert!(!r["outside"]["text"].as_str().unwrap().contains("secret\n"));

    // Without the pin, the same host answer widens the server's reach.
    let r = w.run("roots", open, wide).unwrap();
    assert_eq!(
        r["outside"],
        json!({"is_error": false, "text": "secret\n"}),
        "{r}"
    );
}

#[test]
fn editing_the_policy_changes_the_next_decision_and_a_broken_edit_changes_nothing() {
    let w = World::new();
    let Some(r) = w.run("reload", POLICY, json!({})) else {
        return;
    };
    assert_eq!(r["before"]["is_error"], false, "{r}");
    assert!(
        r["after"]["text"]
            .as_str()
            .unwrap()
            .contains("rule no_reads"),
        "{r}"
    );
    assert!(
        r["broken"]["text"]
            .as_str()
            .unwrap()
            .contains("rule no_reads"),
        "{r}"
    );
    let stderr = w.stderr();
    assert!(
        stderr.contains("the last good version stays in force"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcppol::parse"),
        "the diagnostic's code is logged: {stderr}"
    );
}

#[test]
fn a_lock_file_with_another_fingerprint_makes_the_tool_definition_changed() {
    let w = World::new();
    let lock = w.dir.path().join("fs.lock");
    let other = format!("sha256:{}", "0".repeat(64));
    std::fs::write(
        &lock,
        json!({"version": 1, "tools": {"fs/read_text_file": other}}).to_string(),
    )
    .unwrap();
    let policy = POLICY.replace("default deny", "default deny\n  pin_tools on");
    let Some(r) = w.run("lock", &policy, json!({"proxy_args": ["--lock", lock]})) else {
        return;
    };
    let text = r["read"]["text"].as_str().unwrap();
    assert!(
        r["read"]["is_error"] == true && text.contains("definition_changed"),
        "{r}"
    );
}

/// Issue 22, item 11: a file holding tag characters, U+202E and U+200B,
/// read by the official Python SDK through the proxy in front of the real
/// server: the model's text and `structuredContent` lose them, and the
/// result still passes the SDK's own check against the tool's
/// `outputSchema` (`{content: string}`).
#[test]
fn a_result_with_hidden_characters_reaches_the_sdk_shaped_and_valid() {
    let w = World::new();
    let hidden: String = "IGNORE"
        .chars()
        .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
        .collect();
    std::fs::write(
        Path::new(&w.path("sandbox")).join("poison.txt"),
        format!("safe{hidden} \u{202e}txt.exe\u{200b} end\n"),
    )
    .unwrap();
    let Some(r) = w.run("shaped", POLICY_READS_ANY, json!({})) else {
        return;
    };
    assert_eq!(
        r["read"],
        json!({"is_error": false, "text": "safe txt.exe end\n"}),
        "{r}"
    );
    assert_eq!(
        r["structured"],
        json!({"content": "safe txt.exe end\n"}),
        "{r}"
    );
}

const POLICY_READS_ANY: &str = r#"
policy fs {
  default deny
  allow "fs/read_text_file" when args.path inside "SANDBOX"
}
"#;
