//! Hot reload: file events (debounced) or polling, both ending in a refresh
//! on a background thread, never on the thread that decides.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::state::{Root, Shared};
use super::StoreError;

/// How a store notices that its files changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// The operating system's file events (inotify, FSEvents, ...), with
    /// events closer together than `debounce` taken as one change. If the
    /// events cannot be set up, the store polls every second instead.
    Events {
        /// Events closer together than this are one change.
        debounce: Duration,
    },
    /// Read the files every `interval`: for network and FUSE file systems
    /// and container mounts, where file events are missing or unreliable.
    Poll {
        /// How often the files are read.
        interval: Duration,
    },
}

impl Watch {
    /// File events, debounced by 50 ms.
    pub fn events() -> Self {
        Watch::Events {
            debounce: Duration::from_millis(50),
        }
    }

    /// Polling every second.
    pub fn poll() -> Self {
        Watch::Poll {
            interval: Duration::from_secs(1),
        }
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch::events()
    }
}

/// A running watcher: stops when dropped.
pub(crate) enum Running {
    Events { _watcher: RecommendedWatcher },
    Poll { _poller: Poller },
}

pub(crate) struct Poller {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Poller {
    fn drop(&mut self) {
        // Closing the channel wakes the thread, which then ends.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const FALLBACK_POLL: Duration = Duration::from_secs(1);

pub(crate) fn start(shared: &Arc<Shared>, how: Watch) -> Result<Running, StoreError> {
    match how {
        Watch::Events { debounce } => match events(shared, debounce) {
            Ok(watcher) => Ok(Running::Events { _watcher: watcher }),
            Err(e) => {
                tracing::warn!(
                    target: "mcppol::store",
                    "file events are not available ({e}); polling the policy files every {}s",
                    FALLBACK_POLL.as_secs()
                );
                poll(shared, FALLBACK_POLL).map(|p| Running::Poll { _poller: p })
            }
        },
        Watch::Poll { interval } => poll(shared, interval).map(|p| Running::Poll { _poller: p }),
    }
}

fn events(shared: &Arc<Shared>, debounce: Duration) -> notify::Result<RecommendedWatcher> {
    let targets: Vec<(PathBuf, RecursiveMode)> = shared
        .roots()
        .iter()
        .map(|root| match root {
            Root::Dir(dir) => (dir.clone(), RecursiveMode::Recursive),
            // The folder, not the file: an editor that saves by renaming a
            // new file over the old one replaces the file being watched.
            Root::File(file) => (
                file.parent()
                    .unwrap_or_else(|| Path::new("."))
                    .to_path_buf(),
                RecursiveMode::NonRecursive,
            ),
        })
        .collect();
    let shared = Arc::clone(shared);
    let counter = Arc::clone(&shared);
    let ignored = move || {
        counter.ignored_events.fetch_add(1, Ordering::Relaxed);
    };
    debounced(&targets, debounce, ignored, move |batch| {
        if let Err(e) = batch {
            tracing::warn!(
                target: "mcppol::store",
                "file watcher error ({e}); reading the policy files again"
            );
        }
        // Any change below a watched folder reads every file again: the
        // digest decides what changed, so renames, links swapped by
        // Kubernetes and editors' temporary files need no special case.
        shared.refresh();
    })
}

/// Whether an event may change what a file holds. Opening and reading do
/// not: without this filter, reading the files after a change would count
/// as a change, and the store would read them again forever.
pub(crate) fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Watches `targets` and calls `on_batch`, on a thread of its own, with the
/// paths that changed once no change has come for `debounce` (and at least
/// every ten debounces while changes keep coming); `on_ignored` is called
/// for each event that cannot change a file. Stops when the returned
/// watcher is dropped.
pub(crate) fn debounced(
    targets: &[(PathBuf, RecursiveMode)],
    debounce: Duration,
    on_ignored: impl Fn() + Send + 'static,
    mut on_batch: impl FnMut(Result<Vec<PathBuf>, notify::Error>) + Send + 'static,
) -> notify::Result<RecommendedWatcher> {
    let (events_tx, events) = mpsc::channel::<notify::Result<Event>>();
    let mut watcher = notify::recommended_watcher(move |event| {
        // Fails only once the batching thread is gone: nothing to tell.
        let _ = events_tx.send(event);
    })?;
    for (path, mode) in targets {
        watcher.watch(path, *mode)?;
    }
    let longest = debounce.saturating_mul(10);
    std::thread::Builder::new()
        .name("mcppol-watch".to_string())
        .spawn(move || {
            // Ends when the watcher, and with it the sender, is dropped.
            while let Ok(first) = events.recv() {
                let mut changed = Vec::new();
                let mut error = None;
                let mut take = |event: notify::Result<Event>| match event {
                    Ok(e) if is_change(&e.kind) => {
                        changed.extend(e.paths);
                        true
                    }
                    Ok(_) => {
                        on_ignored();
                        false
                    }
                    Err(e) => {
                        error = Some(e);
                        true
                    }
                };
                if !take(first) {
                    continue;
                }
                let start = Instant::now();
                let mut quiet_from = start;
                loop {
                    let wait = (quiet_from + debounce)
                        .min(start + longest)
                        .saturating_duration_since(Instant::now());
                    if wait.is_zero() {
                        break;
                    }
                    match events.recv_timeout(wait) {
                        Ok(event) => {
                            if take(event) {
                                quiet_from = Instant::now();
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                on_batch(match error {
                    Some(e) => Err(e),
                    None => Ok(changed),
                });
            }
        })
        .map_err(|e| notify::Error::generic(&format!("cannot start the watch thread: {e}")))?;
    Ok(watcher)
}

fn poll(shared: &Arc<Shared>, interval: Duration) -> Result<Poller, StoreError> {
    let (stop, stopped) = mpsc::channel::<()>();
    let shared = Arc::clone(shared);
    let thread = std::thread::Builder::new()
        .name("mcppol-store-poll".to_string())
        .spawn(move || {
            // Woken early only when the store drops its end of the channel.
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                shared.refresh();
            }
        })
        .map_err(|e| StoreError::Watch(format!("cannot start the polling thread: {e}")))?;
    Ok(Poller {
        stop: Some(stop),
        thread: Some(thread),
    })
}
