//! A bundle's policies swapped in whole: the store then holds exactly the
//! bundle's policies, with its stamp, in one snapshot.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use super::{lock, BundleStamp, Entry, Owner, Shared, Snapshot, Swapped};
use crate::Policy;

/// One policy of a verified bundle: its name, the compiled policy, the
/// path of its file inside the bundle, and that file's digest.
pub(crate) type BundledPolicy = (String, Arc<Policy>, String, String);

impl Shared {
    /// Replaces every policy in force with `policies` (already verified and
    /// compiled) at once; returns the new generation.
    pub fn install_bundle(&self, stamp: BundleStamp, policies: Vec<BundledPolicy>) -> u64 {
        let mut state = lock(&self.state);
        let old = self.current.load_full();
        let generation = old.generation + 1;
        let now = SystemTime::now();
        let mut loaded = Vec::with_capacity(policies.len());
        let mut entries = HashMap::with_capacity(policies.len());
        for (name, policy, path, digest) in policies {
            loaded.push(name.clone());
            entries.insert(
                name,
                Entry {
                    policy,
                    owner: Owner::Bundle(path),
                    generation,
                    digest: Arc::from(digest.as_str()),
                    loaded_at: now,
                },
            );
        }
        let mut removed: Vec<String> = old
            .policies
            .keys()
            .filter(|name| !entries.contains_key(*name))
            .cloned()
            .collect();
        removed.sort();
        loaded.sort();
        self.current.store(Arc::new(Snapshot {
            generation,
            policies: entries,
            bundle: Some(Arc::new(stamp)),
        }));
        state.notify(&Swapped {
            generation,
            loaded,
            removed,
            file: None,
        });
        generation
    }
}
