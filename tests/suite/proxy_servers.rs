//! `mcppol proxy --servers FILE --server NAME` (the server's command,
//! arguments, environment and folder from the file; the id NAME), and the
//! start warnings: a `--server-id` no rule names, a `tools {}` entry that
//! hides nothing the server lists.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::proxy::harness::{scripted_server, Proxy};

/// A servers file with the scripted server as `scripted` (its log set
/// through the file's `env`) and a remote one.
fn servers_file(dir: &Path) -> String {
    let file = dir.join("servers.json");
    let text = json!({"mcpServers": {
        "scripted": {
            "command": "python3",
            "args": [scripted_server()],
            "env": {"SCRIPTED_LOG": dir.join("server.log")},
            "cwd": dir,
        },
        "github": {"type": "http", "url": "https://example.test/mcp"},
    }});
    std::fs::write(&file, text.to_string()).unwrap();
    file.to_str().unwrap().to_string()
}

fn policy(dir: &Path, text: &str) -> String {
    let path = dir.join("p.mcppol");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn proxy(dir: &Path, args: &[&str]) -> Proxy {
    let stderr = dir.join("proxy.stderr");
    let mut cmd = Command::new(crate::common::MCPPOL);
    cmd.arg("proxy")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    Proxy::spawn(cmd, stderr)
}

const POLICY: &str = r#"policy scripted {
  default deny
  allow "scripted/echo"
  tools { exclude "scripted/secrte", "scripted/secret" }
}
"#;

#[test]
fn the_server_comes_from_the_file_and_its_name_is_the_server_id() {
    let dir = tempfile::tempdir().unwrap();
    let (servers, policy) = (servers_file(dir.path()), policy(dir.path(), POLICY));
    let mut p = proxy(
        dir.path(),
        &[
            "--policy",
            &policy,
            "--servers",
            &servers,
            "--server",
            "scripted",
        ],
    );
    let init = p.initialize(json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "scripted");
    let list = p.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && !names.contains(&"secret"),
        "{names:?}"
    );
    // Allowed as `scripted/echo`: the id is the server's name.
    let answer = p.call("echo", json!({"text": "hi"}));
    assert!(answer.get("result").is_some(), "{answer}");
    p.close();
    // The file's env reached the server (its log is where it says).
    assert!(dir.path().join("server.log").exists());
    // One warning for the entry that hides nothing, with the likely name;
    // none for the one that hides `secret`.
    let stderr = p.stderr_text();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("hides no tool"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("WARN"), "{stderr}");
    assert!(
        warnings[0]
            .contains("`exclude \"scripted/secrte\"` hides no tool that server `scripted` lists"),
        "{stderr}"
    );
    assert!(
        warnings[0].contains("did you mean `\"scripted/secret\"`?"),
        "{stderr}"
    );
    assert!(!stderr.contains("names the server id"), "{stderr}");
}

#[test]
fn a_server_id_the_policy_does_not_name_is_warned_of_with_the_nearest() {
    let dir = tempfile::tempdir().unwrap();
    let (servers, policy) = (servers_file(dir.path()), policy(dir.path(), POLICY));
    let mut p = proxy(
        dir.path(),
        &[
            "--policy",
            &policy,
            "--servers",
            &servers,
            "--server",
            "scripted",
            "--server-id",
            "scriptd",
        ],
    );
    p.initialize(json!({}));
    p.request("tools/list", json!({}));
    p.close();
    let stderr = p.stderr_text();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("names the server id `scriptd` (it names: `scripted`)"),
        "{stderr}"
    );
    assert!(
        warnings[0].ends_with("did you mean `--server-id scripted`?"),
        "{stderr}"
    );
    // The tools entries name `scripted`, not the server the proxy runs:
    // nothing to say of them.
    assert!(!stderr.contains("hides no tool"), "{stderr}");
}

#[test]
fn usage_errors_of_servers() {
    let dir = tempfile::tempdir().unwrap();
    let (servers, policy) = (servers_file(dir.path()), policy(dir.path(), POLICY));
    for (args, want) in [
        (
            vec!["--servers", &servers, "--server", "github"],
            "mcppol gateway --servers",
        ),
        (
            vec!["--servers", &servers, "--server", "scriptd"],
            "did you mean `scripted`?",
        ),
        (vec!["--servers", &servers], "--server <NAME>"),
        (
            vec!["--servers", &servers, "--server", "scripted", "--", "true"],
            "cannot be used with",
        ),
        (vec!["--", "true"], "--server-id is needed"),
    ] {
        let out = Command::new(crate::common::MCPPOL)
            .args(["proxy", "--policy", &policy])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
