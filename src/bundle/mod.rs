//! Signed policy bundles: the checked policies of a folder and their lock
//! files, in one file, with a manifest signed by Ed25519.
//!
//! # The format (version 1)
//!
//! A bundle is one JSON object (UTF-8, at most [`MAX_BUNDLE_BYTES`]):
//!
//! ```json
//! {"mcppol_bundle": 1,
//!  "manifest": "{\"mcppol_bundle\":1,\"revision\":\"r7\",...}",
//!  "signature": "<128 hex digits>",
//!  "files": [{"path": "github.mcppol", "text": "policy github { ... }"}]}
//! ```
//!
//! - `manifest` is a JSON text kept as a string, so the bytes signed are
//!   the bytes stored: nothing is re-serialized before the signature is
//!   checked. It holds `mcppol_bundle` (1), `revision`, `built_at` (RFC
//!   3339, UTC), `key` (the id of the signing key, [`key_id`]), `policies`
//!   (every policy name the files define, sorted) and `files` (`path`,
//!   `sha256`, `bytes` of every file, sorted by path).
//! - `signature` is the Ed25519 signature of the manifest's bytes, in hex.
//! - `files` are the texts, in the manifest's order: policy files
//!   (`*.mcppol`) and lock files (`mcppol.lock`, `NAME.mcppol.lock`).
//!
//! Every part is bounded (see the constants), no path may leave the
//! bundle (relative, `/`-separated, no `.`/`..`/empty part, no part
//! starting with `.`, no `\`, no control character), and a path may appear
//! once (compared without case, so a bundle unpacked on a case-insensitive
//! disk cannot lose a file). Unknown or repeated keys are refused.
//!
//! Verification ([`verify`]) checks the signature first, then every
//! digest, then that the policies check as `mcppol check` checks them.

mod build;
mod check;
#[cfg(feature = "http")]
mod feed;
mod keys;
mod verify;

pub(crate) use build::{build, BuildOptions};
#[cfg(feature = "http")]
pub(crate) use feed::{BundleFeed, Location};
pub(crate) use keys::{key_id, read_signing_key, read_verifying_key, write_keypair};
#[cfg(feature = "http")]
pub(crate) use verify::Verified;
pub(crate) use verify::{inspect, verify};

use serde::{Deserialize, Serialize};

/// The format version this build writes and reads.
pub(crate) const FORMAT: u32 = 1;
/// The most a bundle file may hold.
pub(crate) const MAX_BUNDLE_BYTES: u64 = 32 * 1024 * 1024;
/// The most files a bundle may hold.
pub(crate) const MAX_FILES: usize = 1_000;
/// The most one file of a bundle may hold (a policy file's own limit).
pub(crate) const MAX_FILE_BYTES: usize = crate::MAX_FILE_BYTES;
/// The most a manifest may hold.
pub(crate) const MAX_MANIFEST_BYTES: usize = 1024 * 1024;
/// The longest path of a file in a bundle, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 255;
/// The most folders a path of a bundle may go down.
pub(crate) const MAX_PATH_DEPTH: usize = 16;
/// The longest revision, in bytes.
pub(crate) const MAX_REVISION_BYTES: usize = 128;
/// The most policies a bundle may define.
pub(crate) const MAX_POLICIES: usize = 10_000;

/// The bundle file as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    mcppol_bundle: u32,
    manifest: String,
    signature: String,
    files: Vec<FileText>,
}

/// One file of a bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileText {
    pub(crate) path: String,
    pub(crate) text: String,
}

/// What the signature covers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    pub(crate) mcppol_bundle: u32,
    pub(crate) revision: String,
    pub(crate) built_at: String,
    pub(crate) key: String,
    pub(crate) policies: Vec<String>,
    pub(crate) files: Vec<ManifestFile>,
}

/// One file as the manifest describes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestFile {
    pub(crate) path: String,
    pub(crate) sha256: String,
    pub(crate) bytes: u64,
}

/// Which step refused a bundle: what the status and the logs name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The bundle (or a key) could not be read or fetched.
    Read,
    /// Not a bundle of this format, or over a bound, or a bad path.
    Format,
    /// The signature does not verify with the key given.
    Signature,
    /// A file's digest or size is not the manifest's.
    Digest,
    /// A policy or lock file does not check.
    Policy,
    /// Older than the bundle in force (built before it), or its revision
    /// with other content: rollback protection (only a polled bundle,
    /// feature `http`, has one in force to compare with).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Revision,
}

impl Step {
    /// The step's name, as the status shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Step::Read => "read",
            Step::Format => "format",
            Step::Signature => "signature",
            Step::Digest => "digest",
            Step::Policy => "policy",
            Step::Revision => "revision",
        }
    }
}

/// Why a bundle was not built, verified or loaded.
#[derive(Debug, Clone)]
pub(crate) struct BundleError {
    pub(crate) step: Step,
    /// What is wrong, naming the file of the bundle when there is one.
    pub(crate) message: String,
    /// What to do about it.
    pub(crate) help: Option<String>,
    /// A policy's diagnostics, drawn by the caller (with colour on a
    /// terminal).
    pub(crate) diagnostics: Vec<crate::Diagnostic>,
}

impl BundleError {
    pub(crate) fn new(step: Step, message: impl Into<String>) -> Self {
        BundleError {
            step,
            message: message.into(),
            help: None,
            diagnostics: Vec::new(),
        }
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The error as one text: the message, the diagnostics drawn, the help.
    pub(crate) fn render(&self, color: bool) -> String {
        let mut out = format!("error: {}\n", self.message);
        if !self.diagnostics.is_empty() {
            out.push_str(&crate::render_all(&self.diagnostics, color));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  help: {help}\n"));
        }
        out
    }
}

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.render(false).trim_end())
    }
}

/// `sha256:` and the hex digest of some bytes.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex(&sha2::Sha256::digest(bytes)))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect()
}

/// Whether a file of a bundle is a policy file (else a lock file).
pub(crate) fn is_policy_path(path: &str) -> bool {
    path.ends_with(".mcppol")
}

/// Whether a file's name makes it part of a bundle: a policy file or an
/// mcppol lock file.
pub(crate) fn is_bundled_name(name: &str) -> bool {
    name.ends_with(".mcppol") || name == "mcppol.lock" || name.ends_with(".mcppol.lock")
}

/// Why a path may not be in a bundle; `None` when it may.
pub(crate) fn path_problem(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some("the path is empty".into());
    }
    if path.len() > MAX_PATH_BYTES {
        return Some(format!("the path is longer than {MAX_PATH_BYTES} bytes"));
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return Some("the path holds a control character or a `\\`".into());
    }
    if path.starts_with('/') {
        return Some("the path is absolute".into());
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > MAX_PATH_DEPTH {
        return Some(format!(
            "the path goes more than {MAX_PATH_DEPTH} folders down"
        ));
    }
    if parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
        return Some("a part of the path is empty, `.`, `..` or starts with `.`".into());
    }
    let name = parts.last().copied().unwrap_or_default();
    if !is_bundled_name(name) {
        return Some(
            "not a policy file (`*.mcppol`) or lock file (`mcppol.lock`, `NAME.mcppol.lock`)"
                .into(),
        );
    }
    None
}

/// Why a revision may not be used; `None` when it may.
pub(crate) fn revision_problem(revision: &str) -> Option<String> {
    if revision.is_empty() || revision.len() > MAX_REVISION_BYTES {
        return Some(format!(
            "a revision has 1 to {MAX_REVISION_BYTES} characters"
        ));
    }
    if !revision
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._:+-@/".contains(c))
    {
        return Some(
            "a revision holds only letters, digits and `. _ : + - @ /` (a tag, a commit, a number)"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_bundle() {
        assert_eq!(path_problem("github.mcppol"), None);
        assert_eq!(path_problem("teams/ops/mcppol.lock"), None);
        assert_eq!(path_problem("ops/github.mcppol.lock"), None);
        for bad in [
            "",
            "/etc/x.mcppol",
            "../x.mcppol",
            "a/../x.mcppol",
            "./x.mcppol",
            "a//x.mcppol",
            ".hidden.mcppol",
            "a\\x.mcppol",
            "x.mcppol\n",
            "notes.txt",
            "Cargo.lock",
        ] {
            assert!(path_problem(bad).is_some(), "{bad:?} passed");
        }
        let deep = "a/".repeat(MAX_PATH_DEPTH) + "x.mcppol";
        assert!(path_problem(&deep).is_some());
    }

    #[test]
    fn revisions_are_short_plain_words() {
        assert_eq!(revision_problem("v1.2.3"), None);
        assert_eq!(revision_problem("git:0a1b2c"), None);
        assert!(revision_problem("").is_some());
        assert!(revision_problem("two words").is_some());
        assert!(revision_problem(&"r".repeat(MAX_REVISION_BYTES + 1)).is_some());
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(&[0, 15, 255])), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }
}
