//! What a store tells operators: which version of each file and policy is
//! in force, since when, and why the newest text did not load.

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::{json, Value};

/// A snapshot of a store's state, for operators. See [`Store::status`](super::Store::status).
#[derive(Debug, Clone)]
pub struct Status {
    /// The store's generation: how many times the policies in force have
    /// been swapped (the first load is generation 1).
    pub generation: u64,
    /// How many times the store has read its files again since it opened
    /// (each batch of file events, each poll tick, each `reload`).
    pub refreshes: u64,
    /// How many file events the watcher saw and did not act on because
    /// they cannot change a file (an open, a read): reading the files after
    /// a change makes such events, and they must not start another read.
    pub ignored_events: u64,
    /// Every file the store holds, by path.
    pub files: Vec<FileStatus>,
    /// Every policy in force, by name.
    pub policies: Vec<PolicyStatus>,
}

/// One policy file.
#[derive(Debug, Clone)]
pub struct FileStatus {
    /// The file's absolute path.
    pub path: PathBuf,
    /// The store generation at which the version in force was loaded;
    /// `None` when no version of the file ever loaded.
    pub generation: Option<u64>,
    /// `sha256:` and the hex digest of the text in force.
    pub digest: Option<String>,
    /// When the version in force was loaded.
    pub loaded_at: Option<SystemTime>,
    /// The policies this file provides, by name.
    pub policies: Vec<String>,
    /// The file is gone from disk; its last good policies stay in force
    /// until a new version loads.
    pub removed: bool,
    /// Set when the newest text of the file did not load (and cleared when a
    /// newer text loads): the version in force is an older one.
    pub last_error: Option<LastError>,
}

/// One policy in force.
#[derive(Debug, Clone)]
pub struct PolicyStatus {
    /// The policy's name.
    pub name: String,
    /// The file it was loaded from; `None` when it came from
    /// [`Store::update`](super::Store::update).
    pub file: Option<PathBuf>,
    /// The store generation at which this version was loaded.
    pub generation: u64,
    /// `sha256:` and the hex digest of the text it was compiled from.
    pub digest: String,
    /// When this version was loaded.
    pub loaded_at: SystemTime,
    /// Set when the newest text offered for this policy (its file, or an
    /// update) did not load.
    pub last_error: Option<LastError>,
}

/// A text that did not load.
#[derive(Debug, Clone)]
pub struct LastError {
    /// The diagnostics drawn as `mcppol check` draws them (no colour).
    pub rendered: String,
    /// The digest of the text that failed, when it could be read.
    pub digest: Option<String>,
    /// When it failed.
    pub at: SystemTime,
}

fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

impl LastError {
    fn to_json(&self) -> Value {
        json!({ "rendered": self.rendered, "digest": self.digest, "at": time(self.at) })
    }
}

impl Status {
    /// The status as one JSON object (times in RFC 3339, UTC).
    pub fn to_json(&self) -> Value {
        json!({
            "generation": self.generation,
            "refreshes": self.refreshes,
            "ignored_events": self.ignored_events,
            "files": self.files.iter().map(|f| json!({
                "path": f.path.display().to_string(),
                "generation": f.generation,
                "digest": f.digest,
                "loaded_at": f.loaded_at.map(time),
                "policies": f.policies,
                "removed": f.removed,
                "last_error": f.last_error.as_ref().map(LastError::to_json),
            })).collect::<Vec<_>>(),
            "policies": self.policies.iter().map(|p| json!({
                "name": p.name,
                "file": p.file.as_ref().map(|f| f.display().to_string()),
                "generation": p.generation,
                "digest": p.digest,
                "loaded_at": time(p.loaded_at),
                "last_error": p.last_error.as_ref().map(LastError::to_json),
            })).collect::<Vec<_>>(),
        })
    }

    /// The status of one file (a relative path is taken from the current
    /// folder, as [`Store::open`](super::Store::open) does).
    pub fn file(&self, path: &std::path::Path) -> Option<&FileStatus> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.files.iter().find(|f| f.path == path)
    }

    /// The status of one policy in force.
    pub fn policy(&self, name: &str) -> Option<&PolicyStatus> {
        self.policies.iter().find(|p| p.name == name)
    }
}
