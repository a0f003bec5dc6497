//! What the relaying front doors (`proxy`, `gateway`) set up the same way
//! from their flags: the baseline of approved fingerprints (`--lock`), the
//! audit file, the command hooks, the watch on the policy, and the fixed
//! rule's protected files. One place, so the two cannot drift apart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::request_args::read_lock;
use super::usage_error;
use crate::pipeline::command_hooks::{load_settings, CommandHookOptions};
use crate::pipeline::{Baseline, Hook};
use crate::protected::Protected;
use crate::proxy::Audit;
use crate::store::{Store, Watch};

/// The files a relaying front door was given.
pub(super) struct Files<'a> {
    /// `--policy`: a file or a folder; `None` with `--bundle` (the feed
    /// swaps the policies in, nothing is watched).
    pub(super) policy: Option<&'a Path>,
    /// `--lock`.
    pub(super) lock: Option<&'a Path>,
    /// `--audit`.
    pub(super) audit: Option<&'a Path>,
    /// `--hooks`.
    pub(super) hooks: Option<&'a Path>,
    /// `--servers`.
    pub(super) servers: Option<&'a Path>,
}

/// What the files set up.
pub(super) struct Enforcing {
    pub(super) baseline: Baseline,
    pub(super) audit: Option<Arc<Audit>>,
    pub(super) hooks: Vec<Hook>,
    /// The files no call may write: the policy (or its folder), the lock,
    /// the audit, hooks and servers files.
    pub(super) protected: Protected,
}

/// Reads the lock and the hooks, opens the audit file and watches the
/// policy; a usage error's status when one of them fails.
pub(super) fn set_up(store: &Store, files: &Files<'_>) -> Result<Enforcing, u8> {
    let baseline = match files.lock {
        None => Baseline::FirstListing,
        Some(path) => match read_lock("--lock", path) {
            Ok(lock) => Baseline::Lock(lock),
            Err(e) => return Err(usage_error(&e, None)),
        },
    };
    let audit = match files.audit {
        None => None,
        Some(path) => match Audit::open(path) {
            Ok(a) => Some(Arc::new(a)),
            Err(e) => {
                return Err(usage_error(
                    &format!("--audit `{}`: {e}", path.display()),
                    None,
                ))
            }
        },
    };
    let hooks = match files.hooks {
        None => Vec::new(),
        Some(path) => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
            match load_settings(path, &CommandHookOptions::new(cwd)) {
                Ok(hooks) => hooks,
                Err(e) => return Err(usage_error(&format!("--hooks: {e}"), None)),
            }
        }
    };
    if let Some(policy) = files.policy {
        if let Err(e) = store.watch(Watch::events()) {
            return Err(usage_error(
                &format!("cannot watch `{}`: {e}", policy.display()),
                None,
            ));
        }
    }
    // The fixed rule: no call writes what this front door enforces or
    // records.
    let mut protected = Protected::new();
    match files.policy {
        Some(policy) if policy.is_dir() => protected.folder(policy),
        Some(policy) => protected.policy_file(policy),
        None => {}
    }
    for file in [files.lock, files.audit, files.hooks, files.servers]
        .into_iter()
        .flatten()
    {
        protected.file(file);
    }
    Ok(Enforcing {
        baseline,
        audit,
        hooks,
        protected,
    })
}
