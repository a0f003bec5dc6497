//! End to end: the real server-everything, server-memory and
//! server-filesystem from npm behind one `mcppol gateway --stdio`, driven
//! by the official MCP Python SDK client (`tests/e2e/sdk_gateway.py`).
//! `.ci/e2e-deps` installs them into `.e2e/`. Without `.e2e/` the tests skip
//! with a message, unless `CI` is set: then missing dependencies fail.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn package(name: &str) -> PathBuf {
    root().join(format!(
        ".e2e/node/node_modules/@modelcontextprotocol/{name}/dist/index.js"
    ))
}

/// The SDK's Python, or `None` (skip).
pub(crate) fn python() -> Option<PathBuf> {
    let python = root().join(".e2e/venv/bin/python");
    let servers = ["server-everything", "server-memory", "server-filesystem"];
    if python.exists() && servers.iter().all(|s| package(s).exists()) {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!("the end-to-end dependencies are missing under CI: run .ci/e2e-deps");
    }
    eprintln!(
        "skipped: the end-to-end dependencies are not installed (.e2e/ is absent); run .ci/e2e-deps"
    );
    None
}

const POLICY: &str = r#"
policy gw {
  default deny
  tools { exclude "everything/get-env" }
  deny confused_deputy: "memory/create_entities" when tainted
  deny omar_no_sums: "everything/get-sum" when principal == "omar"
  ask writes: "fs/write_file" when args.path inside "SANDBOX"
  allow "everything/*", "memory/*"
  allow "fs/read_text_file" when args.path inside "SANDBOX"
}
"#;

/// A fresh folder with the policy, the servers file (everything, memory
/// writing its pid first so a test can kill it, filesystem on `sandbox/`)
/// and a tokens file (dana's and omar's); the script's config.
pub(crate) fn world() -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = std::fs::canonicalize(dir.path()).unwrap().join("sandbox");
    std::fs::create_dir(&sandbox).unwrap();
    std::fs::write(sandbox.join("hello.txt"), "hello\n").unwrap();
    let policy = dir.path().join("gw.mcppol");
    std::fs::write(
        &policy,
        POLICY.replace("SANDBOX", sandbox.to_str().unwrap()),
    )
    .unwrap();
    let memory_pid = dir.path().join("memory.pid");
    // `$$$$` is the shell's `$$` once the servers file's `$$` is read.
    let memory = format!(
        "echo $$$$ > '{}'; exec node '{}'",
        memory_pid.display(),
        package("server-memory").display()
    );
    let servers = json!({"mcpServers": {
        "everything": {"command": "node", "args": [package("server-everything"), "stdio"]},
        "memory": {"command": "sh", "args": ["-c", memory],
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
        "fs": {"command": "node", "args": [package("server-filesystem"), sandbox]},
    }});
    let servers_file = dir.path().join("servers.json");
    std::fs::write(&servers_file, servers.to_string()).unwrap();
    std::fs::write(
        dir.path().join("tokens.json"),
        json!({"tokens": [
            {"token": "dana-token-0123456789abcdef", "principal": "dana"},
            {"token": "omar-token-0123456789abcdef", "principal": "omar"}]})
        .to_string(),
    )
    .unwrap();
    let cfg = json!({
        "mcppol": crate::common::MCPPOL,
        "policy": policy,
        "servers": servers_file,
        "everything_js": package("server-everything"),
        "memory_pid": memory_pid,
        "sandbox": sandbox,
        "stderr": dir.path().join("gateway.stderr"),
        "gateway_args": ["--audit", dir.path().join("audit.jsonl")],
    });
    (dir, cfg)
}

/// Runs one scenario of `sdk_gateway.py` with this config.
pub(crate) fn script(python: &Path, scenario: &str, cfg: &Value) -> Value {
    let out = Command::new(python)
        .arg(root().join("tests/e2e/sdk_gateway.py"))
        .arg(scenario)
        .arg(cfg.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK host failed: {}\ngateway stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(cfg["stderr"].as_str().unwrap()).unwrap_or_default()
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs one scenario against a gateway the script starts on its stdio.
fn run(scenario: &str) -> Option<(Value, tempfile::TempDir)> {
    let python = python()?;
    let (dir, cfg) = world();
    Some((script(&python, scenario, &cfg), dir))
}

/// A gateway listening on loopback HTTP with the world's tokens file.
pub(crate) struct Listening {
    child: std::process::Child,
    pub(crate) url: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn listen(dir: &Path, cfg: &Value) -> Listening {
    let stderr = PathBuf::from(cfg["stderr"].as_str().unwrap());
    let mut child = Command::new(crate::common::MCPPOL)
        .arg("gateway")
        .arg("--policy")
        .arg(cfg["policy"].as_str().unwrap())
        .arg("--servers")
        .arg(cfg["servers"].as_str().unwrap())
        .args(["--listen", "127.0.0.1:0", "--tokens"])
        .arg(dir.join("tokens.json"))
        .arg("--audit")
        .arg(dir.join("audit.jsonl"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    for _ in 0..400 {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        if let Some(rest) = log.split("addr=").nth(1) {
            let addr = rest.split_whitespace().next().unwrap();
            return Listening {
                child,
                url: format!("http://{addr}/mcp"),
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the gateway did not listen");
}

pub(crate) fn text(view: &Value) -> String {
    view["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn three_real_servers_behind_one_gateway_and_taint_without_the_host() {
    let Some((r, dir)) = run("basics") else {
        return;
    };
    assert_eq!(r["server_name"], "mcppol-gateway");
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for expected in [
        "everything__echo",
        "memory__create_entities",
        "memory__read_graph",
        "fs__read_text_file",
    ] {
        assert!(
            tools.contains(&expected),
            "{expected} missing from {tools:?}"
        );
    }
    assert!(!tools.contains(&"everything__get-env"), "{tools:?}");
    assert!(tools.iter().all(|t| t.contains("__")), "{tools:?}");

    // An allowed call answers as the server does straight.
    assert_eq!(r["echo"], r["direct_echo"]);
    assert!(
        text(&r["echo"]).contains("hello through the gateway"),
        "{r}"
    );

    // The confused deputy: the memory write is allowed while the context
    // is clean, denied once everything's output is in it.
    assert_eq!(r["write_before"]["is_error"], false, "{r}");
    assert_eq!(r["write_after"]["is_error"], true, "{r}");
    assert!(
        text(&r["write_after"]).contains("rule confused_deputy"),
        "{r}"
    );
    let graph = std::fs::read_to_string(dir.path().join("memory.jsonl")).unwrap();
    assert!(
        graph.contains("before") && !graph.contains("\"after\""),
        "{graph}"
    );

    assert_eq!(r["hidden"]["rpc_error"]["code"], -32602, "{r}");
    assert_eq!(
        r["hidden"]["rpc_error"]["message"],
        "Unknown tool: everything__get-env"
    );
    assert_eq!(text(&r["fs_read"]), "hello\n", "{r}");

    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let denied = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["rule_id"] == "confused_deputy")
        .unwrap_or_else(|| panic!("no audit line of the denied write:\n{audit}"));
    assert_eq!(
        (denied["server"].as_str(), denied["name"].as_str()),
        (Some("memory"), Some("create_entities"))
    );
}

#[test]
fn a_server_killed_mid_session_fails_only_its_own_calls_and_comes_back() {
    let Some((r, _dir)) = run("kill") else {
        return;
    };
    assert_eq!(r["before"]["is_error"], false, "{r}");
    assert_eq!(r["killed"]["rpc_error"]["code"], -32603, "{r}");
    let message = r["killed"]["rpc_error"]["message"].as_str().unwrap();
    assert!(message.contains("`memory`"), "{message}");
    assert!(text(&r["other"]).contains("still here"), "{r}");
    assert!(!r["tools_back"].as_array().unwrap().is_empty(), "{r}");
    assert_eq!(r["after"]["is_error"], false, "{r}");
}

#[test]
fn over_streamable_http_taint_per_principal_rules_and_an_ask_by_elicitation() {
    let Some(python) = python() else {
        return;
    };
    let (dir, cfg) = world();
    let gateway = listen(dir.path(), &cfg);
    let as_caller = |token: &str, extra: Value| {
        let mut c = cfg.clone();
        c["url"] = json!(gateway.url);
        c["token"] = json!(token);
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let dana = "dana-token-0123456789abcdef";
    let omar = "omar-token-0123456789abcdef";
    // The confused deputy over HTTP, as over stdio.
    let r = script(&python, "basics", &as_caller(dana, json!({})));
    assert_eq!(r["server_name"], "mcppol-gateway");
    assert_eq!(r["echo"], r["direct_echo"]);
    assert_eq!(r["write_before"]["is_error"], false, "{r}");
    assert_eq!(r["write_after"]["is_error"], true, "{r}");
    assert!(
        text(&r["write_after"]).contains("rule confused_deputy"),
        "{r}"
    );

    // Two tokens, one policy: omar may not sum; dana may, and her write is
    // asked of her through the POST's event stream and done.
    let d = script(
        &python,
        "principal",
        &as_caller(
            dana,
            json!({"elicit": "allow_once", "write_name": "dana.txt"}),
        ),
    );
    assert_eq!(text(&d["sum"]), "The sum of 1 and 2 is 3.", "{d}");
    assert_eq!(d["write"]["is_error"], false, "{d}");
    assert_eq!(d["asked"].as_array().unwrap().len(), 1, "{d}");
    let written =
        std::fs::read_to_string(PathBuf::from(cfg["sandbox"].as_str().unwrap()).join("dana.txt"))
            .unwrap();
    assert_eq!(written, "asked");
    let o = script(
        &python,
        "principal",
        &as_caller(omar, json!({"elicit": "deny", "write_name": "omar.txt"})),
    );
    assert_eq!(o["sum"]["is_error"], true, "{o}");
    assert!(text(&o["sum"]).contains("rule omar_no_sums"), "{o}");
    assert_eq!(o["write"]["is_error"], true, "{o}");
    assert!(!PathBuf::from(cfg["sandbox"].as_str().unwrap())
        .join("omar.txt")
        .exists());
    drop(gateway);
}

#[cfg(feature = "http")]
#[test]
fn a_remote_server_over_streamable_http_behind_the_gateway() {
    let Some(python) = python() else {
        return;
    };
    let everything = crate::remote_e2e::EverythingHttp::start(&package("server-everything"));
    let (dir, cfg) = world();
    // `remote` is server-everything's HTTP mode; memory stays a child.
    let servers = json!({"mcpServers": {
        "remote": {"type": "http", "url": everything.url},
        "memory": {"command": "node", "args": [package("server-memory")],
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
    }});
    std::fs::write(cfg["servers"].as_str().unwrap(), servers.to_string()).unwrap();
    let policy = r#"
policy gw {
  default deny
  tools { exclude "remote/get-env" }
  deny confused_deputy: "memory/create_entities" when tainted
  allow "remote/*", "memory/*"
}
"#;
    std::fs::write(cfg["policy"].as_str().unwrap(), policy).unwrap();
    let r = script(&python, "remote", &cfg);
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"remote__echo") && tools.contains(&"memory__read_graph"),
        "{tools:?}"
    );
    assert!(!tools.contains(&"remote__get-env"), "{tools:?}");
    assert!(text(&r["echo"]).contains("over HTTP"), "{r}");
    assert_eq!(r["write_after"]["is_error"], true, "{r}");
    assert!(
        text(&r["write_after"]).contains("rule confused_deputy"),
        "{r}"
    );
}
