//! Issue 8 through the real binary: a resource URI that cannot be
//! normalized, `explain` showing the URI as matched, server ids with `/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::mcppol;
use serde_json::Value;

const POLICY: &str = r#"policy p {
  scope tools, resources
  deny resource "*/file:///etc/*"
  allow resource "fs/file:///home/dev/project/*"
}
"#;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn eval(policy: &str, resource: &str) -> Value {
    let out = mcppol()
        .args(["eval", "--policy", policy, "--resource", resource])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn eval_normalizes_a_uri_and_denies_one_that_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(&dir, "p.mcppol", POLICY);
    let climbing = eval(&policy, "fs/file:///home/dev/project/../../../etc/passwd");
    assert_eq!(climbing["decision"], "deny");
    assert_eq!(climbing["rule_id"], "deny:0");
    let inside = eval(&policy, "fs/file:///home/dev/project/src/../main.rs");
    assert_eq!(inside["decision"], "allow");
    for bad in [
        "fs/file:///home/dev/project/..%2F..%2F..%2Fetc%2Fpasswd",
        "fs/file:///home/dev/project/%zz",
    ] {
        let d = eval(&policy, bad);
        assert_eq!(
            (&d["decision"], &d["source"], &d["reason"], &d["rule_id"]),
            (
                &Value::from("deny"),
                &Value::from("request"),
                &Value::from("bad_uri"),
                &Value::Null
            ),
            "{bad}"
        );
    }
}

#[test]
fn explain_shows_the_uri_as_matched() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(&dir, "p.mcppol", POLICY);
    let out = mcppol()
        .args([
            "explain",
            "--policy",
            &policy,
            "--resource",
            "fs/FILE:///home/dev/project/%2e%2e/../../etc/passwd",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("is matched as `file:///etc/passwd`"),
        "{text}"
    );
    assert!(text.contains("decision: deny (source: deny"), "{text}");
}

#[test]
fn a_listing_naming_a_server_with_a_slash_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let listing = write(&dir, "tools.json", r#"{"a/b": {"tools": [{"name": "c"}]}}"#);
    let policy = write(&dir, "p.mcppol", POLICY);
    for args in [
        vec!["lock", "--tools", listing.as_str()],
        vec!["check", "--tools", listing.as_str(), policy.as_str()],
    ] {
        let out = mcppol().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("server id `a/b` is not usable"), "{err}");
    }
}

/// Issue 22, item 4, through the binary: a link inside the sandbox that
/// points outside escapes where the tool acts on this machine
/// (`--local-tool`, as behind the hook or a stdio server), and the policy's
/// `resolve_links` setting overrides either way.
#[cfg(unix)]
#[test]
fn a_link_that_leads_out_of_the_sandbox_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let sandbox = base.join("sandbox");
    std::fs::create_dir_all(&sandbox).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(base.join("outside"), sandbox.join("link")).unwrap();
    let sandbox = sandbox.to_str().unwrap().to_string();
    let rules = format!(
        r#"  deny out: "fs/*" when args.path escapes "{sandbox}"
  allow read: "fs/read_text_file" when args.path inside "{sandbox}"
}}
"#
    );
    let decide = |setting: &str, local: bool, path: &str| {
        let policy = write(&dir, "p.mcppol", &format!("policy p {{\n{setting}{rules}"));
        let args = serde_json::json!({ "path": path }).to_string();
        let mut cmd = mcppol();
        cmd.args(["eval", "--policy", &policy, "--tool", "fs/read_text_file"]);
        cmd.args(["--args", &args, "--cwd", &sandbox]);
        if local {
            cmd.arg("--local-tool");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d: Value = serde_json::from_slice(&out.stdout).unwrap();
        format!(
            "{} {}",
            d["decision"].as_str().unwrap(),
            d["rule_id"].as_str().unwrap_or("-")
        )
    };
    let through = format!("{sandbox}/link/secret.txt");
    assert_eq!(decide("", true, &through), "deny out");
    assert_eq!(decide("", true, "link/secret.txt"), "deny out");
    assert_eq!(decide("", true, "real.txt"), "allow read");
    // No tool on this machine: read as written, unless the policy says on.
    assert_eq!(decide("", false, &through), "allow read");
    assert_eq!(decide("  resolve_links on\n", false, &through), "deny out");
    assert_eq!(
        decide("  resolve_links off\n", true, &through),
        "allow read"
    );
    // explain says why.
    let policy = write(&dir, "p.mcppol", &format!("policy p {{\n{rules}"));
    let args = serde_json::json!({ "path": through }).to_string();
    let out = mcppol()
        .args([
            "explain",
            "--policy",
            &policy,
            "--tool",
            "fs/read_text_file",
            "--local-tool",
        ])
        .args(["--args", &args])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("once its symbolic links are read"), "{text}");
}
