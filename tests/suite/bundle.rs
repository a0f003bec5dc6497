//! `mcppol bundle`: build, verify and inspect signed policy bundles through
//! the binary; `inspect`'s output and every refusal are golden.
//!
//! The keys are fixtures (`tests/fixtures/bundle/`, test keys only), and
//! builds set `SOURCE_DATE_EPOCH`, so a bundle is the same bytes on every
//! run (Ed25519 signatures are deterministic) and the snapshots hold.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::Value;

use crate::common::mcppol;

const GITHUB: &str = "policy github {\n  default deny\n  allow \"github/get_user\"\n}\n";
const OPS: &str = "policy ops {\n  default deny\n  allow \"ops/status\"\n}\n";
const LOCK: &str = "{\"version\": 1, \"tools\": {}}\n";
/// 2026-12-02T10:00:00Z.
const EPOCH: &str = "1796205600";

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bundle")
        .join(name)
}

/// A scratch folder with `pol/` (two policies in two files, one in a
/// subfolder, and a lock file).
pub(crate) fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let pol = dir.path().join("pol");
    std::fs::create_dir_all(pol.join("teams")).unwrap();
    std::fs::write(pol.join("github.mcppol"), GITHUB).unwrap();
    std::fs::write(pol.join("teams/ops.mcppol"), OPS).unwrap();
    std::fs::write(pol.join("mcppol.lock"), LOCK).unwrap();
    // Not bundled: not a policy or lock file, or hidden.
    std::fs::write(pol.join("notes.txt"), "x").unwrap();
    std::fs::write(pol.join(".draft.mcppol"), "policy {").unwrap();
    dir
}

/// Builds `pol/` of `dir` into `dir/OUT` with the test key; the output.
pub(crate) fn build(dir: &Path, out: &str, revision: &str) -> std::process::Output {
    mcppol()
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args([
            "bundle",
            "build",
            "pol",
            "-o",
            out,
            "--revision",
            revision,
            "--key",
        ])
        .arg(fixture("test-key.pem"))
        .output()
        .unwrap()
}

fn verify(dir: &Path, bundle: &str, key: &str) -> (i32, String, String) {
    let out = mcppol()
        .current_dir(dir)
        .args(["bundle", "verify", bundle, "--pub"])
        .arg(fixture(key))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The bundle's JSON, changed by `edit`, written back.
fn edit(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut bundle: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut bundle);
    std::fs::write(path, serde_json::to_vec(&bundle).unwrap()).unwrap();
}

/// Changes the manifest with `change` and signs it again with the test
/// key: a bundle whose signature is good but whose content is bad.
pub(crate) fn resign(path: &Path, change: impl FnOnce(&mut Value, &mut Value)) {
    let pem = std::fs::read_to_string(fixture("test-key.pem")).unwrap();
    let key = SigningKey::from_pkcs8_pem(&pem).unwrap();
    edit(path, |bundle| {
        let mut manifest: Value =
            serde_json::from_str(bundle["manifest"].as_str().unwrap()).unwrap();
        change(&mut manifest, &mut bundle["files"]);
        let text = serde_json::to_string(&manifest).unwrap();
        let signature = key.sign(text.as_bytes()).to_bytes();
        let hex: String = signature.iter().map(|b| format!("{b:02x}")).collect();
        bundle["manifest"] = Value::String(text);
        bundle["signature"] = Value::String(hex);
    });
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn a_built_bundle_verifies_and_inspects() {
    let dir = scratch();
    let out = build(dir.path(), "p.bundle", "v1");
    assert!(out.status.success(), "{out:?}");
    insta::assert_snapshot!("bundle_build", String::from_utf8_lossy(&out.stderr));
    let (code, stdout, stderr) = verify(dir.path(), "p.bundle", "test-key.pub");
    assert_eq!((code, stderr.as_str()), (0, ""));
    insta::assert_snapshot!("bundle_verify", stdout);
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "inspect", "p.bundle"])
        .output()
        .unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!("bundle_inspect", String::from_utf8_lossy(&out.stdout));
    // The same files, key and time make the same bytes.
    let again = build(dir.path(), "q.bundle", "v1");
    assert!(again.status.success());
    assert_eq!(
        std::fs::read(dir.path().join("p.bundle")).unwrap(),
        std::fs::read(dir.path().join("q.bundle")).unwrap()
    );
}

#[test]
fn inspect_as_json_lists_every_file() {
    let dir = scratch();
    assert!(build(dir.path(), "p.bundle", "v1").status.success());
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "inspect", "p.bundle", "--format", "json"])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["revision"], "v1");
    assert_eq!(json["signature_checked"], false);
    assert_eq!(json["policies"], serde_json::json!(["github", "ops"]));
    let paths: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["github.mcppol", "mcppol.lock", "teams/ops.mcppol"]);
    assert_eq!(json["files"][0]["sha256"], sha256(GITHUB));
}

#[test]
fn build_refuses_a_policy_the_checker_rejects() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("pol/teams/ops.mcppol"),
        "policy ops {\n  allow\n}\n",
    )
    .unwrap();
    let out = build(dir.path(), "p.bundle", "v1");
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("p.bundle").exists());
    insta::assert_snapshot!(
        "bundle_build_broken_policy",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn build_refuses_a_name_two_files_define_and_a_bad_lock() {
    let dir = scratch();
    std::fs::write(dir.path().join("pol/teams/github.mcppol"), GITHUB).unwrap();
    let out = build(dir.path(), "p.bundle", "v1");
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(
        "bundle_build_duplicate_policy",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = scratch();
    std::fs::write(dir.path().join("pol/mcppol.lock"), "{\"tools\": 3}").unwrap();
    let out = build(dir.path(), "p.bundle", "v1");
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(
        "bundle_build_bad_lock",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn build_refuses_a_bad_key_or_revision() {
    let dir = scratch();
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "build", "pol", "-o", "p.bundle", "--key"])
        .arg(fixture("test-key.pub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr)
        .replace(&fixture("").display().to_string(), "FIXTURES/");
    insta::assert_snapshot!("bundle_build_public_key", stderr);
    let out = build(dir.path(), "p.bundle", "two words");
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(
        "bundle_build_bad_revision",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each way a bundle can be wrong: (name, how it is made wrong).
type Spoil = (&'static str, Box<dyn Fn(&Path)>);

#[test]
fn verify_refuses_each_way_a_bundle_can_be_wrong() {
    let spoils: Vec<Spoil> = vec![
        (
            "changed_file",
            Box::new(|p| {
                edit(p, |b| {
                    b["files"][0]["text"] = Value::String(GITHUB.replace("deny", "allow"));
                })
            }),
        ),
        (
            "changed_manifest",
            Box::new(|p| {
                edit(p, |b| {
                    let m = b["manifest"].as_str().unwrap().replace("\"v1\"", "\"v2\"");
                    b["manifest"] = Value::String(m);
                })
            }),
        ),
        (
            "truncated",
            Box::new(|p| {
                let bytes = std::fs::read(p).unwrap();
                std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
            }),
        ),
        (
            "not_json",
            Box::new(|p| std::fs::write(p, "<html>502 Bad Gateway</html>").unwrap()),
        ),
        (
            "extra_file",
            Box::new(|p| {
                edit(p, |b| {
                    b["files"].as_array_mut().unwrap().push(serde_json::json!(
                        {"path": "zz.mcppol", "text": "policy zz { allow \"*\" }"}
                    ));
                })
            }),
        ),
        (
            "missing_file",
            Box::new(|p| {
                edit(p, |b| {
                    b["files"].as_array_mut().unwrap().pop();
                })
            }),
        ),
        (
            "unknown_key",
            Box::new(|p| edit(p, |b| b["extra"] = Value::Bool(true))),
        ),
        (
            "bad_signature_text",
            Box::new(|p| edit(p, |b| b["signature"] = Value::String("00".into()))),
        ),
        (
            "signed_broken_policy",
            Box::new(|p| {
                let broken = "policy github {\n  allow\n}\n";
                resign(p, |m, files| {
                    files[0]["text"] = Value::String(broken.into());
                    m["files"][0]["sha256"] = Value::String(sha256(broken));
                    m["files"][0]["bytes"] = Value::from(broken.len());
                })
            }),
        ),
        (
            "signed_path_escape",
            Box::new(|p| {
                resign(p, |m, files| {
                    files[0]["path"] = Value::String("../github.mcppol".into());
                    m["files"][0]["path"] = Value::String("../github.mcppol".into());
                })
            }),
        ),
        (
            "signed_duplicate_path",
            Box::new(|p| {
                resign(p, |m, files| {
                    let first = files[0].clone();
                    files.as_array_mut().unwrap().insert(1, first);
                    let entry = m["files"][0].clone();
                    m["files"].as_array_mut().unwrap().insert(1, entry);
                })
            }),
        ),
        (
            "signed_wrong_policy_list",
            Box::new(|p| resign(p, |m, _| m["policies"] = serde_json::json!(["github"]))),
        ),
    ];
    for (name, spoil) in spoils {
        let dir = scratch();
        assert!(build(dir.path(), "p.bundle", "v1").status.success());
        spoil(&dir.path().join("p.bundle"));
        let (code, stdout, stderr) = verify(dir.path(), "p.bundle", "test-key.pub");
        assert_eq!((code, stdout.as_str()), (1, ""), "{name}: {stderr}");
        insta::assert_snapshot!(format!("bundle_verify_{name}"), stderr);
    }
}

#[test]
fn verify_with_another_key_names_the_key_it_wants() {
    let dir = scratch();
    assert!(build(dir.path(), "p.bundle", "v1").status.success());
    let (code, _, stderr) = verify(dir.path(), "p.bundle", "other-key.pub");
    assert_eq!(code, 1);
    insta::assert_snapshot!("bundle_verify_other_key", stderr);
    // A private key where the public one goes: a usage error with a fix.
    let (code, _, stderr) = verify(dir.path(), "p.bundle", "test-key.pem");
    assert_eq!(code, 2);
    assert!(stderr.contains("this is a private key"), "{stderr}");
}

#[test]
fn keygen_writes_a_pair_that_builds_and_verifies_and_never_overwrites() {
    let dir = scratch();
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "keygen", "-o", "k.pem"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("k.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "build", "pol", "-o", "p.bundle", "--key", "k.pem"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "verify", "p.bundle", "--pub", "k.pub"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let again = mcppol()
        .current_dir(dir.path())
        .args(["bundle", "keygen", "-o", "k.pem"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}
