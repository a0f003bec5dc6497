//! Hot reload: file events (debounced) or polling, both ending in a refresh
//! on a background thread, never on the thread that decides.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use super::state::{Root, Shared};
use super::StoreError;

/// How a store notices that its files changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// The operating system's file events (inotify, FSEvents, ...), with
    /// events closer together than `debounce` taken as one change. If the
    /// events cannot be set up, the store polls every second instead.
    Events { debounce: Duration },
    /// Read the files every `interval`: for network and FUSE file systems
    /// and container mounts, where file events are missing or unreliable.
    Poll { interval: Duration },
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
    Events {
        _debouncer: Debouncer<RecommendedWatcher>,
    },
    Poll {
        _poller: Poller,
    },
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
            Ok(debouncer) => Ok(Running::Events {
                _debouncer: debouncer,
            }),
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

fn events(
    shared: &Arc<Shared>,
    debounce: Duration,
) -> notify::Result<Debouncer<RecommendedWatcher>> {
    let handler_shared = Arc::clone(shared);
    let mut debouncer = new_debouncer(debounce, move |result: DebounceEventResult| {
        if let Err(e) = result {
            tracing::warn!(
                target: "mcppol::store",
                "file watcher error ({e}); reading the policy files again"
            );
        }
        // Any event below a watched folder reads every file again: the
        // digest decides what changed, so renames, links swapped by
        // Kubernetes and editors' temporary files need no special case.
        handler_shared.refresh();
    })?;
    for root in shared.roots() {
        match &root {
            Root::Dir(dir) => debouncer.watcher().watch(dir, RecursiveMode::Recursive)?,
            // The folder, not the file: an editor that saves by renaming a
            // new file over the old one replaces the file being watched.
            Root::File(file) => {
                let parent = file.parent().unwrap_or_else(|| Path::new("."));
                debouncer
                    .watcher()
                    .watch(parent, RecursiveMode::NonRecursive)?;
            }
        }
    }
    Ok(debouncer)
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
