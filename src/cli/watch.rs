//! `mcppol check --watch PATH...`: check once, then again on every save,
//! for authors editing a policy live. Runs until interrupted.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult};

use super::{exit, usage_error};

/// Saves closer together than this are checked once.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// Runs `check` now and after every change to a policy file under `paths`;
/// returns only if the paths cannot be checked or watched (or the watcher
/// stops), with the status of the last check.
pub fn run(paths: &[PathBuf], mut check: impl FnMut() -> u8) -> u8 {
    // Watch first, then check: a save made during the first check is not
    // missed.
    let (events_tx, events) = mpsc::channel::<DebounceEventResult>();
    let mut debouncer = match new_debouncer(DEBOUNCE, events_tx) {
        Ok(d) => d,
        Err(e) => return usage_error(&format!("cannot watch the files: {e}"), None),
    };
    let watched: Vec<PathBuf> = paths.iter().map(|p| absolute(p)).collect();
    for path in &watched {
        // A file through its folder: editors that save by renaming a new
        // file over the old one replace the file itself.
        let (target, mode) = if path.is_dir() {
            (path.as_path(), RecursiveMode::Recursive)
        } else {
            let parent = path.parent().unwrap_or_else(|| Path::new("."));
            (parent, RecursiveMode::NonRecursive)
        };
        if let Err(e) = debouncer.watcher().watch(target, mode) {
            // A path that does not exist: the check says so.
            if check() == exit::USAGE {
                return exit::USAGE;
            }
            let message = format!("cannot watch `{}`: {e}", target.display());
            return usage_error(&message, None);
        }
    }
    let mut status = check();
    if status == exit::USAGE {
        return status;
    }
    eprintln!("watching for changes; press ctrl-c to stop");
    for result in events {
        let changed: Vec<PathBuf> = match result {
            Ok(events) => events
                .into_iter()
                .map(|e| e.path)
                .filter(|p| is_policy_file(p, &watched))
                .collect(),
            Err(e) => {
                eprintln!("warning: file watcher error: {e}");
                continue;
            }
        };
        let Some(first) = changed.first() else {
            continue;
        };
        eprintln!();
        eprintln!("── `{}` changed: checking again ──", first.display());
        status = check();
    }
    status
}

/// A `*.mcppol` file, or one of the files named on the command line.
fn is_policy_file(path: &Path, watched: &[PathBuf]) -> bool {
    path.extension().is_some_and(|e| e == "mcppol") || watched.iter().any(|w| w == path)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
