//! The runtime: named policies loaded from files and folders, decided
//! against without locks, and reloaded while decisions run.
//!
//! A [`Store`] holds every policy of its files by name. Readers take an
//! immutable snapshot ([`Store::get`], [`Store::decide`]): a decision in
//! flight never sees half of a reload. Writers (the file watcher, the
//! poller, [`Store::update`], [`Store::reload`]) parse and compile on their
//! own thread and swap the new policies in at once.
//!
//! Failure rules (a failure never widens access, a bad policy never
//! replaces a good one):
//!
//! - a file that does not load at start is an error: [`Store::open`] fails
//!   with every diagnostic of every file;
//! - a new text that does not load (a syntax error, a half-written file, an
//!   empty file, a name another file already defines) leaves the last good
//!   version in force; the failure is logged with `tracing::error!` and kept
//!   in the [`Status`];
//! - a deleted file leaves its last good policies in force until a new
//!   version loads;
//! - a policy that is not loaded decides `deny` with `reason: no_policy`.

mod error;
mod state;
mod status;
pub(crate) mod watch;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use error::StoreError;
pub use state::{BundleStamp, Reloaded, Swapped, SUBSCRIBER_BACKLOG};
pub use status::{FileStatus, LastError, PolicyStatus, Status};
pub use watch::Watch;

use state::{Root, Shared};

use crate::{Decision, LoadOptions, Policy, Request};

/// Named policies from files and folders, hot-reloaded.
///
/// ```
/// use mcppol::{Store, Watch};
/// use mcppol::{LoadOptions, Reason, Request, Verdict};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("github.mcppol"), r#"
///     policy github {
///       default deny
///       allow "github/get_user"
///     }
/// "#)?;
///
/// // Every `*.mcppol` below the folder; a file that does not load is an
/// // error here, with its rendered diagnostics.
/// let store = Store::open([dir.path()], LoadOptions::default())?;
/// store.watch(Watch::events())?; // reload on change, off this thread
///
/// let d = store.decide("github", &Request::tool("github", "get_user"));
/// assert_eq!(d.decision, Verdict::Allow);
///
/// // A policy that is not loaded denies.
/// let d = store.decide("jira", &Request::tool("jira", "create_issue"));
/// assert_eq!((d.decision, d.reason), (Verdict::Deny, Reason::NoPolicy));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    shared: Arc<Shared>,
    watcher: Mutex<Option<watch::Running>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("generation", &self.generation())
            .field("policies", &self.names())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Loads every policy of the given files and folders (every `*.mcppol`
    /// below a folder; names starting with `.` are skipped). Fails, with
    /// every diagnostic drawn, when a file does not load, a path does not
    /// exist, a file defines no policy, or two files define the same policy
    /// name. Does not watch: call [`Store::watch`] for hot reload.
    ///
    /// Paths are kept absolute (relative ones are joined to the current
    /// folder), and the status reports them so.
    pub fn open<I, P>(paths: I, options: LoadOptions) -> Result<Store, StoreError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut roots = Vec::new();
        for path in paths {
            let path = absolute(path.as_ref());
            roots.push(if path.is_dir() {
                Root::Dir(path)
            } else {
                Root::File(path)
            });
        }
        let shared = Arc::new(Shared::new(roots, options));
        shared.open()?;
        Ok(Store {
            shared,
            watcher: Mutex::new(None),
        })
    }

    /// A store with no files: policies come only from [`Store::update`].
    ///
    /// ```
    /// use mcppol::Store;
    /// use mcppol::{LoadOptions, Request, Verdict};
    ///
    /// let store = Store::empty(LoadOptions::default());
    /// store.update("ops", r#"policy ops { allow "ops/status" }"#)?;
    /// let d = store.decide("ops", &Request::tool("ops", "status"));
    /// assert_eq!(d.decision, Verdict::Allow);
    /// # Ok::<(), mcppol::StoreError>(())
    /// ```
    pub fn empty(options: LoadOptions) -> Store {
        Store {
            shared: Arc::new(Shared::new(Vec::new(), options)),
            watcher: Mutex::new(None),
        }
    }

    /// Starts hot reload: file events or polling, on a background thread.
    /// Replaces a watcher started before; the store stops watching when it
    /// is dropped. Also reads the files once now, to catch changes made
    /// since [`Store::open`].
    ///
    /// With [`Watch::Events`], a folder is watched recursively and a single
    /// file through its folder (so a save by rename is seen). If file
    /// events cannot be set up (no inotify watches left, say), the store
    /// polls every second instead and logs a warning.
    pub fn watch(&self, how: Watch) -> Result<(), StoreError> {
        let running = watch::start(&self.shared, how)?;
        let mut slot = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some(running);
        drop(slot);
        self.shared.refresh();
        Ok(())
    }

    /// Stops hot reload (the policies in force stay).
    pub fn unwatch(&self) {
        let running = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(running);
    }

    /// The policy in force under that name: an immutable snapshot, kept
    /// whole however many reloads happen while it is used.
    pub fn get(&self, name: &str) -> Option<Arc<Policy>> {
        self.shared
            .current
            .load()
            .policies
            .get(name)
            .map(|e| Arc::clone(&e.policy))
    }

    /// The policy in force under that name and the bundle it came from
    /// (`None` when the store does not run from a bundle), read from one
    /// snapshot: the stamp is the one the policy was swapped in with.
    pub fn get_stamped(&self, name: &str) -> (Option<Arc<Policy>>, Option<Arc<BundleStamp>>) {
        let snapshot = self.shared.current.load();
        (
            snapshot.policies.get(name).map(|e| Arc::clone(&e.policy)),
            snapshot.bundle.clone(),
        )
    }

    /// Replaces every policy in force with those of a verified bundle, at
    /// once, stamped with its revision and digest; returns the new
    /// generation. Subscribers get one [`Swapped`] notice.
    #[cfg(all(feature = "bundle", feature = "http"))]
    pub(crate) fn install_bundle(
        &self,
        stamp: BundleStamp,
        policies: Vec<state::BundledPolicy>,
    ) -> u64 {
        self.shared.install_bundle(stamp, policies)
    }

    /// Counts a bundle that did not load (refused, or not fetched).
    #[cfg(all(feature = "bundle", feature = "http"))]
    pub(crate) fn bundle_failed(&self) {
        self.shared
            .bundle_failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many bundles did not load (refused, or not fetched) since the
    /// store started.
    #[cfg(all(feature = "bundle", feature = "http"))]
    pub(crate) fn bundle_failures(&self) -> u64 {
        self.shared
            .bundle_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Decides a request against the policy of that name; a name that is
    /// not loaded is denied with `reason: no_policy`. Lock-free: reloads
    /// never block it.
    pub fn decide(&self, name: &str, request: &Request<'_>) -> Decision {
        match self.shared.current.load().policies.get(name) {
            Some(entry) => entry.policy.decide(request),
            None => Decision::no_policy(),
        }
    }

    /// A channel told of every swap: after each load, reload or update
    /// that changes the policies in force, it receives a [`Swapped`] with
    /// the new generation, the policies added or replaced and those taken
    /// out. A text that does not load swaps nothing and sends nothing.
    ///
    /// Notices are sent on the thread that swapped (the watcher's, or the
    /// caller's of [`Store::update`] and [`Store::reload`]), without
    /// blocking: up to [`SUBSCRIBER_BACKLOG`] wait unread, and newer ones
    /// to a full channel are dropped (read [`Store::generation`] to catch
    /// up). Dropping the receiver unsubscribes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcppol::Store;
    /// use mcppol::LoadOptions;
    ///
    /// let store = Store::empty(LoadOptions::default());
    /// let swaps = store.subscribe();
    /// store.update("ops", r#"policy ops { allow "ops/status" }"#)?;
    /// let notice = swaps.recv_timeout(Duration::from_secs(5))?;
    /// assert_eq!((notice.generation, notice.loaded), (1, vec!["ops".to_string()]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe(&self) -> std::sync::mpsc::Receiver<Swapped> {
        self.shared.subscribe()
    }

    /// The names of the policies in force, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shared
            .current
            .load()
            .policies
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// How many times the policies in force have been swapped (each load,
    /// reload or update that changes them adds one; the first is 1).
    pub fn generation(&self) -> u64 {
        self.shared.current.load().generation
    }

    /// Replaces policies with new text, with the same checks as a file
    /// load, and swaps them in at once; returns the new generation.
    ///
    /// `name_or_file` is a file the store holds (the text is its new
    /// version, in memory only: the file on disk wins again when it
    /// changes), or else a policy name (the text must define that policy
    /// and no other; a name not loaded yet is added). A text that does not
    /// load changes nothing, and the error is also kept in the status.
    ///
    /// ```
    /// use mcppol::Store;
    /// use mcppol::{LoadOptions, Request, Verdict};
    ///
    /// let store = Store::empty(LoadOptions::default());
    /// store.update("ops", r#"policy ops { allow "ops/status" }"#)?;
    ///
    /// // A bad text is refused and the good one stays in force.
    /// let err = store.update("ops", "policy ops { allow }").unwrap_err();
    /// assert!(err.to_string().contains("<update of ops>"));
    /// let d = store.decide("ops", &Request::tool("ops", "status"));
    /// assert_eq!(d.decision, Verdict::Allow);
    /// # Ok::<(), mcppol::StoreError>(())
    /// ```
    pub fn update(&self, name_or_file: &str, text: &str) -> Result<u64, StoreError> {
        let as_path = absolute(Path::new(name_or_file));
        if self.shared.holds_file(&as_path) {
            self.shared.update_file(&as_path, text)
        } else {
            self.shared.update_policy(name_or_file, text)
        }
    }

    /// Replaces the text of one file the store holds (in memory; see
    /// [`Store::update`]).
    pub fn update_file(&self, path: &Path, text: &str) -> Result<u64, StoreError> {
        self.shared.update_file(&absolute(path), text)
    }

    /// Reads every file now and loads the ones whose text changed (what the
    /// watcher does on each change; useful on `SIGHUP` or without a
    /// watcher).
    pub fn reload(&self) -> Reloaded {
        self.shared.refresh()
    }

    /// The state of every file and policy, for operators.
    ///
    /// ```
    /// use mcppol::Store;
    /// use mcppol::LoadOptions;
    ///
    /// let store = Store::empty(LoadOptions::default());
    /// store.update("ops", r#"policy ops { allow "ops/status" }"#)?;
    /// let _ = store.update("ops", "policy ops {");
    ///
    /// let status = store.status();
    /// let ops = status.policy("ops").ok_or("not loaded")?;
    /// assert_eq!(ops.generation, 1);
    /// assert!(ops.digest.starts_with("sha256:"));
    /// assert!(ops.last_error.is_some()); // the newest text did not load
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn status(&self) -> Status {
        self.shared.status()
    }
}

/// The examples of `docs/runtime.md`, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/runtime.md")]
pub struct RuntimeGuide;

/// Every diagnostic [`Store::open`] would give for these paths (none when
/// they load), with the paths as given, not made absolute. It is the
/// store's own loader: `mcppol check` runs it, so a folder `check` passes
/// is one the store, and so `mcppol proxy`, loads (a policy defined in two
/// files, or reached twice through a link, is `duplicate_policy` for both).
#[cfg(feature = "cli")]
pub(crate) fn load_diagnostics<P: AsRef<Path>>(
    paths: &[P],
    options: &LoadOptions,
) -> Vec<crate::Diagnostic> {
    let roots = paths
        .iter()
        .map(|p| {
            let p = p.as_ref().to_path_buf();
            if p.is_dir() {
                Root::Dir(p)
            } else {
                Root::File(p)
            }
        })
        .collect();
    match Shared::new(roots, options.clone()).open() {
        Ok(()) => Vec::new(),
        Err(e) => e.diagnostics,
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
