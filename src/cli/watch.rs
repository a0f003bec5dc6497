//! `mcppol check --watch PATH...`: check once, then again on every save,
//! for authors editing a policy live. Runs until interrupted.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use notify::RecursiveMode;

use super::{exit, usage_error};
use crate::store::watch::debounced;

/// Saves closer together than this are checked once.
const DEBOUNCE: Duration = Duration::from_millis(150);

/// Runs `check` now and after every change to a policy file under `paths`;
/// returns only if the paths cannot be checked or watched (or the watcher
/// stops), with the status of the last check.
pub fn run(paths: &[PathBuf], mut check: impl FnMut() -> u8) -> u8 {
    // Watch first, then check: a save made during the first check is not
    // missed.
    let watched: Vec<PathBuf> = paths.iter().map(|p| absolute(p)).collect();
    let targets: Vec<(PathBuf, RecursiveMode)> = watched
        .iter()
        .map(|path| {
            if path.is_dir() {
                (path.clone(), RecursiveMode::Recursive)
            } else {
                // A file through its folder: editors that save by renaming
                // a new file over the old one replace the file itself.
                let parent = path.parent().unwrap_or_else(|| Path::new("."));
                (parent.to_path_buf(), RecursiveMode::NonRecursive)
            }
        })
        .collect();
    let (batches_tx, batches) = mpsc::channel();
    let _watcher = match debounced(
        &targets,
        DEBOUNCE,
        || {},
        move |batch| {
            let _ = batches_tx.send(batch);
        },
    ) {
        Ok(w) => w,
        Err(e) => {
            // A path that does not exist: the check says so.
            if check() == exit::USAGE {
                return exit::USAGE;
            }
            return usage_error(&format!("cannot watch the files: {e}"), None);
        }
    };
    let mut status = check();
    if status == exit::USAGE {
        return status;
    }
    eprintln!("watching for changes; press ctrl-c to stop");
    for batch in batches {
        let changed: Vec<PathBuf> = match batch {
            Ok(paths) => paths
                .into_iter()
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
