//! The writer side of a store: reads files, compiles them, checks a new
//! version against the policies in force, and swaps in a new snapshot.
//!
//! Every writer (a watcher, the poller, `update`, `reload`) holds the state
//! lock for a whole refresh, so versions are committed in the order they
//! were read. Readers never take the lock: they load the snapshot.
//!
//! This file holds the state and the store's operations on it; `files`
//! holds one file's part of a refresh.

mod files;
#[cfg(all(feature = "bundle", feature = "http"))]
mod install;
#[cfg(all(feature = "bundle", feature = "http"))]
pub(crate) use install::BundledPolicy;

use crate::diagnostics::codes;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};

use super::status::{FileStatus, LastError, PolicyStatus, Status};
use crate::diagnostics::{Diagnostic, LoadError, SourceFile};
use crate::syntax::Span;
use crate::{compile, LoadOptions, Policy, PolicySet};

use files::{io_error, is_clash, walk, Outcome};

/// Where a policy in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    File(PathBuf),
    Update,
    /// A file of the bundle in force (its path inside the bundle).
    #[cfg(all(feature = "bundle", feature = "http"))]
    Bundle(String),
}

/// One policy in force.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub policy: Arc<Policy>,
    pub owner: Owner,
    pub generation: u64,
    pub digest: Arc<str>,
    pub loaded_at: SystemTime,
}

/// The policies in force: replaced whole, never changed in place.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub generation: u64,
    pub policies: HashMap<String, Entry>,
    /// The bundle these policies came from, when they did: swapped with
    /// them, so a decision and the revision it names always agree.
    pub bundle: Option<Arc<BundleStamp>>,
}

/// The bundle a store's policies came from (`--bundle`): what every
/// decision log line of a front door running from a bundle names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleStamp {
    /// The bundle's revision.
    pub revision: String,
    /// `sha256:` of the whole bundle file.
    pub digest: String,
}

/// The stamp of the snapshot in force (a file load or an update keeps it).
pub(crate) fn old_bundle(current: &ArcSwap<Snapshot>) -> Option<Arc<BundleStamp>> {
    current.load().bundle.clone()
}

/// What the store was asked to hold.
#[derive(Debug, Clone)]
pub(crate) enum Root {
    File(PathBuf),
    Dir(PathBuf),
}

/// The version of a file in force.
#[derive(Debug, Clone)]
struct Version {
    digest: Arc<str>,
    generation: u64,
    loaded_at: SystemTime,
}

#[derive(Debug, Default)]
struct FileState {
    in_force: Option<Version>,
    /// The policies this file provides now.
    owned: BTreeSet<String>,
    /// The digest of the newest text read from disk; a refresh that reads
    /// the same text again does nothing. `None` forces the next read to load.
    last_seen: Option<String>,
    removed: bool,
    error: Option<LastError>,
}

/// The shared core of a store: the snapshot readers load and the state
/// writers lock.
pub(crate) struct Shared {
    pub current: ArcSwap<Snapshot>,
    state: Mutex<State>,
    /// File events the watcher saw and did not act on (opens, reads).
    pub ignored_events: AtomicU64,
    /// Bundles refused or not fetched (`--bundle`): for the metrics.
    /// (Read only where bundles are fetched: features `bundle` and `http`.)
    #[cfg_attr(not(all(feature = "bundle", feature = "http")), allow(dead_code))]
    pub bundle_failures: AtomicU64,
}

pub(crate) struct State {
    pub roots: Vec<Root>,
    options: LoadOptions,
    files: BTreeMap<PathBuf, FileState>,
    /// The newest update by name that did not load, by policy name.
    update_errors: BTreeMap<String, LastError>,
    /// How many times the files were read again (`refresh`).
    refreshes: u64,
    /// Who is told of every swap.
    subscribers: Vec<SyncSender<Swapped>>,
}

impl State {
    /// Tells every subscriber of a swap; forgets those that hung up. Never
    /// blocks: a subscriber whose channel is full misses this notice.
    pub(crate) fn notify(&mut self, swapped: &Swapped) {
        self.subscribers
            .retain(|tx| match tx.try_send(swapped.clone()) {
                Ok(()) | Err(TrySendError::Full(_)) => true,
                Err(TrySendError::Disconnected(_)) => false,
            });
    }
}

/// A notice that the store swapped in new policies: what
/// [`crate::store::Store::subscribe`] receives, once per swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swapped {
    /// The store's generation after the swap.
    pub generation: u64,
    /// The policies the swap added or replaced, sorted.
    pub loaded: Vec<String>,
    /// The policies the swap took out (a file's new version no longer
    /// defines them), sorted.
    pub removed: Vec<String>,
    /// The file whose new version was swapped in; `None` for an update by
    /// policy name.
    pub file: Option<PathBuf>,
}

/// How many notices a subscriber's channel holds unread; past that, newer
/// notices to it are dropped (its host reads [`crate::store::Store::generation`]
/// to catch up), so a host that never reads cannot make the store grow.
pub const SUBSCRIBER_BACKLOG: usize = 64;

/// What one refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Files whose new text is now in force.
    pub loaded: usize,
    /// Files whose new text did not load (their last good version stays).
    pub failed: usize,
    /// Files that disappeared (their last good version stays).
    pub removed: usize,
}

/// `sha256:` and the hex digest of a text.
pub(crate) fn digest(text: &str) -> String {
    use std::fmt::Write;
    let hash = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for byte in hash.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A writer that panicked left no half-made snapshot behind (snapshots
    // are swapped whole), so the state is still usable.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(roots: Vec<Root>, options: LoadOptions) -> Self {
        Shared {
            current: ArcSwap::from_pointee(Snapshot::default()),
            state: Mutex::new(State {
                roots,
                options,
                files: BTreeMap::new(),
                update_errors: BTreeMap::new(),
                refreshes: 0,
                subscribers: Vec::new(),
            }),
            ignored_events: AtomicU64::new(0),
            bundle_failures: AtomicU64::new(0),
        }
    }

    /// A channel that receives a [`Swapped`] notice after every swap.
    pub fn subscribe(&self) -> Receiver<Swapped> {
        let (tx, rx) = sync_channel(SUBSCRIBER_BACKLOG);
        lock(&self.state).subscribers.push(tx);
        rx
    }

    pub fn roots(&self) -> Vec<Root> {
        lock(&self.state).roots.clone()
    }

    /// The first load: every file must load, and no name may be defined
    /// twice. All the errors of all the files are reported together.
    pub fn open(&self) -> Result<(), LoadError> {
        let mut state = lock(&self.state);
        let mut errors = Vec::new();
        for root in state.roots.clone() {
            match &root {
                Root::File(path) if !path.is_file() => errors.push(io_error(
                    path,
                    format!("`{}` does not exist or is not a file", path.display()),
                )),
                Root::Dir(dir) => {
                    let mut found = Vec::new();
                    if let Err(e) = walk(dir, &mut found) {
                        errors.push(io_error(
                            dir,
                            format!("cannot read `{}`: {e}", dir.display()),
                        ));
                    } else if found.is_empty() {
                        tracing::warn!(
                            target: "mcppol::store",
                            folder = %dir.display(),
                            "no `*.mcppol` file in the policy folder yet"
                        );
                    }
                }
                Root::File(_) => {}
            }
        }
        if errors.is_empty() {
            for path in state.files_on_disk() {
                let outcome = state.refresh_file(&self.current, &path);
                if let Outcome::Failed(e) = outcome {
                    errors.push(e);
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(LoadError::new(
                errors.into_iter().flat_map(|e| e.diagnostics).collect(),
            ))
        }
    }

    /// Reads every file again and loads those whose text changed.
    ///
    /// Removals are noted first and name clashes tried again last, so a
    /// policy moved from one file to another within one change loads.
    pub fn refresh(&self) -> Reloaded {
        let mut state = lock(&self.state);
        state.refreshes += 1;
        let on_disk: BTreeSet<PathBuf> = state.files_on_disk().into_iter().collect();
        let gone: Vec<PathBuf> = state
            .files
            .keys()
            .filter(|p| !on_disk.contains(*p))
            .cloned()
            .collect();
        let mut summary = Reloaded::default();
        for path in gone {
            if let Outcome::Removed = state.mark_removed(&path) {
                summary.removed += 1;
            }
        }
        let mut clashed = Vec::new();
        for path in &on_disk {
            match state.refresh_file(&self.current, path) {
                Outcome::Loaded => summary.loaded += 1,
                Outcome::Failed(e) => {
                    if is_clash(&e) {
                        clashed.push(path);
                    }
                    summary.failed += 1;
                }
                Outcome::Removed => summary.removed += 1,
                Outcome::Unchanged => {}
            }
        }
        if summary.loaded > 0 {
            for path in clashed {
                if let Outcome::Loaded = state.refresh_file(&self.current, path) {
                    summary.loaded += 1;
                    summary.failed = summary.failed.saturating_sub(1);
                }
            }
        }
        state.prune();
        summary
    }

    /// Loads `text` as the new version of a file the store holds.
    pub fn update_file(&self, path: &Path, text: &str) -> Result<u64, super::StoreError> {
        let mut state = lock(&self.state);
        if !state.files.contains_key(path) {
            return Err(super::StoreError::UnknownFile(path.to_path_buf()));
        }
        let digest = digest(text);
        // The text on disk is unchanged: remember it as read, so that the
        // next refresh does not put it back over this update.
        let (last_seen, removed) = state
            .files
            .get(path)
            .map(|f| (f.last_seen.clone(), f.removed))
            .unwrap_or_default();
        match state.load_file(&self.current, path, text, &digest) {
            Ok(generation) => {
                if let Some(file) = state.files.get_mut(path) {
                    file.last_seen = last_seen;
                    file.removed = removed;
                }
                Ok(generation)
            }
            Err(e) => {
                state.fail_file(path, Some(digest), &e, "update did not load");
                Err(e.into())
            }
        }
    }

    /// Whether `key` names a file the store holds.
    pub fn holds_file(&self, key: &Path) -> bool {
        lock(&self.state).files.contains_key(key)
    }

    /// Loads `text` as the new version of one policy, by name.
    pub fn update_policy(&self, name: &str, text: &str) -> Result<u64, super::StoreError> {
        let mut state = lock(&self.state);
        let origin = format!("<update of {name}>");
        let digest = digest(text);
        let result = compile::load(SourceFile::new(origin.clone(), text), &state.options)
            .and_then(|set| only_policy(&set, name, &origin).map(|p| (set.source.clone(), p)));
        let policy = match result {
            Ok((_, policy)) => policy,
            Err(e) => {
                let record = LastError {
                    rendered: e.render(false),
                    digest: Some(digest.clone()),
                    at: SystemTime::now(),
                };
                tracing::error!(
                    target: "mcppol::store",
                    policy = name,
                    digest = %digest,
                    "policy update did not load; the last good version stays in force\n{}",
                    record.rendered
                );
                state.update_errors.insert(name.to_string(), record);
                return Err(e.into());
            }
        };
        let old = self.current.load_full();
        let generation = old.generation + 1;
        let mut policies = old.policies.clone();
        if let Some(Entry {
            owner: Owner::File(previous),
            ..
        }) = policies.get(name)
        {
            if let Some(file) = state.files.get_mut(previous) {
                file.owned.remove(name);
            }
        }
        policies.insert(
            name.to_string(),
            Entry {
                policy,
                owner: Owner::Update,
                generation,
                digest: Arc::from(digest.as_str()),
                loaded_at: SystemTime::now(),
            },
        );
        self.current.store(Arc::new(Snapshot {
            generation,
            policies,
            bundle: old_bundle(&self.current),
        }));
        state.notify(&Swapped {
            generation,
            loaded: vec![name.to_string()],
            removed: Vec::new(),
            file: None,
        });
        state.update_errors.remove(name);
        tracing::info!(
            target: "mcppol::store",
            policy = name,
            generation,
            digest = %digest,
            "policy updated"
        );
        Ok(generation)
    }

    pub fn status(&self) -> Status {
        let state = lock(&self.state);
        let snapshot = self.current.load_full();
        let files = state
            .files
            .iter()
            .map(|(path, f)| FileStatus {
                path: path.clone(),
                generation: f.in_force.as_ref().map(|v| v.generation),
                digest: f.in_force.as_ref().map(|v| v.digest.to_string()),
                loaded_at: f.in_force.as_ref().map(|v| v.loaded_at),
                policies: f.owned.iter().cloned().collect(),
                removed: f.removed,
                last_error: f.error.clone(),
            })
            .collect();
        let mut policies: Vec<PolicyStatus> = snapshot
            .policies
            .iter()
            .map(|(name, e)| {
                let (file, last_error) = match &e.owner {
                    Owner::File(path) => (
                        Some(path.clone()),
                        state.files.get(path).and_then(|f| f.error.clone()),
                    ),
                    Owner::Update => (None, state.update_errors.get(name).cloned()),
                    #[cfg(all(feature = "bundle", feature = "http"))]
                    Owner::Bundle(path) => (Some(PathBuf::from(path)), None),
                };
                PolicyStatus {
                    name: name.clone(),
                    file,
                    generation: e.generation,
                    digest: e.digest.to_string(),
                    loaded_at: e.loaded_at,
                    last_error,
                }
            })
            .collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        Status {
            generation: snapshot.generation,
            refreshes: state.refreshes,
            ignored_events: self.ignored_events.load(Ordering::Relaxed),
            files,
            policies,
        }
    }
}

/// The one policy an update by name must define.
fn only_policy(set: &PolicySet, name: &str, origin: &str) -> Result<Arc<Policy>, LoadError> {
    let source = &set.source;
    let Some(policy) = set.get(name) else {
        return Err(LoadError::new(vec![Diagnostic::error(
            source,
            codes::STORE_MISSING_POLICY,
            Span::default(),
            format!("`{origin}` does not define policy `{name}`"),
        )
        .with_help(format!("the text must hold `policy {name} {{ ... }}`"))]));
    };
    if let Some(other) = set.iter().find(|p| p.name != name) {
        return Err(LoadError::new(vec![Diagnostic::error(
            source,
            codes::STORE_OTHER_POLICY,
            other.name_span,
            format!(
                "an update of `{name}` defines another policy, `{}`",
                other.name
            ),
        )
        .with_label("not the policy being updated")
        .with_help(
            "update one policy at a time, or update the whole file it lives in",
        )]));
    }
    Ok(Arc::clone(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha256_hex() {
        assert_eq!(
            digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn an_update_by_name_must_define_that_policy_only() {
        let set = PolicySet::from_text("t", "policy a { }\npolicy b { }").unwrap();
        assert!(only_policy(&set, "a", "t").is_err());
        let set = PolicySet::from_text("t", "policy a { }").unwrap();
        assert!(only_policy(&set, "a", "t").is_ok());
        let err = only_policy(&set, "b", "t").unwrap_err();
        assert_eq!(err.diagnostics[0].code, "mcppol::store::missing_policy");
    }
}
