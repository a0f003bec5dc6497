//! The hook's checked-policy cache: a hook runs as a new process for every
//! tool call, and compiling a policy's condition regexes is most of what
//! loading it costs. The first call that loads a policy text compiles
//! everything, as every other front door does, and leaves a marker in the
//! state folder (`STATE_DIR/checked/KEY`, KEY the SHA-256 of mcppol's
//! version, its regex limits and the text). A later call that finds the
//! marker for the same text still parses and compiles the text, but
//! compiles each condition regex only when a request reaches it
//! (`crate::compile::Regexes::Deferred`): the decision is the same, since
//! the text is the one that loaded.
//!
//! The marker is trusted with nothing but "this text loaded": a marker
//! that is missing, cut, of another text or version, or not a regular
//! file is ignored (the text is compiled whole and the marker written
//! again), and a regex that would not compile after all (a marker written
//! by hand for a text that does not load) makes its test unknown, which
//! fails closed (a deny or ask rule on it matches, an allow rule does not),
//! within the same size limit and file budget. The state folder is one the
//! hook protects from the tools it governs. At most [`MAX_MARKERS`] are
//! kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::taint::{create_private_dir, private_file_options, TaintStore};
use super::HookConfig;
use crate::compile::{Regexes, REGEX_BUDGET, REGEX_SIZE_LIMIT};
use crate::diagnostics::SourceFile;
use crate::{LoadOptions, Policy};

/// The first line of every marker.
const HEADER: &str = "mcppol checked policy 1";

/// The state folder's subfolder that holds the markers.
pub const FOLDER: &str = "checked";

/// The most markers the folder keeps: writing one when it holds this many
/// entries removes the others (a policy edited often leaves one a text).
pub const MAX_MARKERS: usize = 32;

/// The most bytes a marker is read for (one is under 100).
const MAX_MARKER_BYTES: u64 = 256;

/// How many entries of the folder are looked at when pruning it.
const MAX_PRUNED: usize = 4096;

/// Loads the policy the hook is run with, as [`super::load_policy`] does,
/// its condition regexes deferred when the text is one that loaded before
/// (see the module's documentation). Same errors, same policy.
pub fn load_policy(config: &HookConfig) -> Result<Arc<Policy>, String> {
    if config.preloaded.is_some() {
        return super::load_policy(config);
    }
    let Some(folder) = folder(config) else {
        return super::load_policy(config);
    };
    let Ok(text) = crate::read_policy_file(&config.policy) else {
        // The plain load reads it again and says why it cannot.
        return super::load_policy(config);
    };
    let key = key(&text);
    let marker = folder.join(&key);
    let checked = holds(&marker, &key);
    let regexes = if checked {
        Regexes::Deferred
    } else {
        Regexes::Now
    };
    let source = SourceFile::new(config.policy.display().to_string(), text);
    let set = crate::compile::load_with(source, &LoadOptions::default(), regexes)
        .map_err(|e| super::load_error(config, &e))?;
    if !checked {
        // Best effort: without a marker the next call compiles it all again.
        let _ = write(&folder, &marker, &key);
    }
    super::pick(config, &set)
}

/// The markers' folder under the hook's state folder, if it has one.
fn folder(config: &HookConfig) -> Option<PathBuf> {
    let state = match &config.state_dir {
        Some(dir) => dir.clone(),
        None => TaintStore::default_dir().ok()?,
    };
    Some(state.join(FOLDER))
}

/// The marker's name for a policy text: the SHA-256, in hex, of what the
/// text's loading depends on besides the text.
fn key(text: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(
        format!(
            "mcppol {} regex {REGEX_SIZE_LIMIT} {REGEX_BUDGET}\0",
            env!("CARGO_PKG_VERSION")
        )
        .as_bytes(),
    );
    hash.update(text.as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A marker's whole content.
fn content(key: &str) -> String {
    format!("{HEADER}\n{key}\n")
}

/// Whether `marker` is a regular file that says exactly what the marker
/// of `key` says.
fn holds(marker: &Path, key: &str) -> bool {
    crate::io::read_bounded(marker, MAX_MARKER_BYTES, "checked-policy marker")
        .is_ok_and(|bytes| bytes == content(key).as_bytes())
}

/// Writes the marker whole (aside, then renamed into place), first
/// clearing the folder when it is full.
fn write(folder: &Path, marker: &Path, key: &str) -> std::io::Result<()> {
    create_private_dir(folder)?;
    prune(folder);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let aside = folder.join(format!("{key}.{}.{nanos}.new", std::process::id()));
    let written = (|| {
        use std::io::Write;
        let mut f = private_file_options().open(&aside)?;
        f.write_all(content(key).as_bytes())
    })();
    let placed = written.and_then(|()| std::fs::rename(&aside, marker));
    if placed.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    placed
}

/// Removes every entry of the folder once it holds [`MAX_MARKERS`].
fn prune(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let entries: Vec<PathBuf> = entries
        .take(MAX_PRUNED)
        .flatten()
        .map(|e| e.path())
        .collect();
    if entries.len() < MAX_MARKERS {
        return;
    }
    for path in entries {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Request, Verdict};

    const POLICY: &str = r#"policy p {
  default ask
  deny rm: "claude/Bash" when args.command matches /\brm\s+-[a-z]*f/
  allow ls: "claude/Bash" when args.command matches /^(ls|cargo test)( |$)/
}
"#;

    fn setup(text: &str) -> (tempfile::TempDir, HookConfig) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let policy = dir.path().join("p.mcppol");
        std::fs::write(&policy, text).unwrap_or_else(|e| panic!("{e}"));
        let config = HookConfig {
            state_dir: Some(dir.path().join("state")),
            ..HookConfig::new(&policy)
        };
        (dir, config)
    }

    fn verdict(policy: &Policy, command: &str) -> Verdict {
        let args = serde_json::json!({ "command": command });
        policy
            .decide(&Request::tool("claude", "Bash").with_args(&args))
            .decision
    }

    fn marker(config: &HookConfig, text: &str) -> PathBuf {
        folder(config)
            .unwrap_or_else(|| panic!("no folder"))
            .join(key(text))
    }

    #[test]
    fn the_first_load_leaves_a_marker_and_later_ones_decide_alike() {
        let (_dir, config) = setup(POLICY);
        let first = load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
        let marker = marker(&config, POLICY);
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap_or_else(|e| panic!("{e}")),
            content(&key(POLICY))
        );
        let again = load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
        for command in ["rm -rf /", "ls -la", "cargo test", "cat x", "rm x"] {
            assert_eq!(
                verdict(&first, command),
                verdict(&again, command),
                "{command}"
            );
        }
        assert_eq!(verdict(&again, "rm -rf /"), Verdict::Deny);
        assert_eq!(verdict(&again, "ls -la"), Verdict::Allow);
        assert_eq!(verdict(&again, "cat x"), Verdict::Ask);
    }

    #[test]
    fn a_marker_of_another_text_or_cut_short_is_ignored_and_written_again() {
        let (_dir, config) = setup(POLICY);
        let marker = marker(&config, POLICY);
        create_private_dir(marker.parent().unwrap_or_else(|| panic!("no parent")))
            .unwrap_or_else(|e| panic!("{e}"));
        for bad in [
            String::new(),
            format!("{HEADER}\n"),
            content(&key("another text")),
        ] {
            std::fs::write(&marker, &bad).unwrap_or_else(|e| panic!("{e}"));
            assert!(!holds(&marker, &key(POLICY)));
            let policy = load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(verdict(&policy, "rm -rf /"), Verdict::Deny);
            assert!(holds(&marker, &key(POLICY)), "rewritten after {bad:?}");
        }
    }

    #[test]
    fn a_marker_that_is_not_a_regular_file_is_ignored() {
        let (_dir, config) = setup(POLICY);
        let marker = marker(&config, POLICY);
        std::fs::create_dir_all(&marker).unwrap_or_else(|e| panic!("{e}"));
        let policy = load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict(&policy, "rm -rf /"), Verdict::Deny);
        assert!(marker.is_dir());
    }

    /// A marker written by hand for a text that does not load: the text
    /// loads, and the regex that does not compile fails closed.
    #[test]
    fn a_forged_marker_fails_closed() {
        let text = r#"policy p {
  default ask
  deny big: "claude/Bash" when args.command matches /\w{1000}/
  allow any: "claude/Bash" when args.command matches /\w{999}x/
}
"#;
        let (_dir, config) = setup(text);
        let err = load_policy(&config)
            .err()
            .unwrap_or_else(|| panic!("loaded"));
        assert!(err.contains("does not load"), "{err}");
        assert!(
            !marker(&config, text).exists(),
            "no marker for a text that does not load"
        );
        let marker = marker(&config, text);
        create_private_dir(marker.parent().unwrap_or_else(|| panic!("no parent")))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&marker, content(&key(text))).unwrap_or_else(|e| panic!("{e}"));
        let policy = load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict(&policy, "ls"), Verdict::Deny);
    }

    #[test]
    fn a_policy_that_does_not_load_says_so_as_before() {
        let (_dir, config) = setup("policy p { allow \"a/b\" when args.x matches /a(/ }\n");
        let err = load_policy(&config).err();
        assert!(err.is_some());
        assert_eq!(err, super::super::load_policy(&config).err());
        let missing = HookConfig {
            policy: config.policy.with_extension("missing"),
            ..config.clone()
        };
        let err = load_policy(&missing).err();
        assert!(
            err.as_deref().is_some_and(|e| e.contains("cannot read")),
            "{err:?}"
        );
        assert_eq!(err, super::super::load_policy(&missing).err());
    }

    #[test]
    fn a_full_folder_is_cleared_before_a_marker_is_added() {
        let (_dir, config) = setup(POLICY);
        let folder = folder(&config).unwrap_or_else(|| panic!("no folder"));
        create_private_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..MAX_MARKERS {
            std::fs::write(folder.join(format!("old{i}")), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        load_policy(&config).unwrap_or_else(|e| panic!("{e}"));
        let left: Vec<_> = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from(key(POLICY))]);
    }
}
