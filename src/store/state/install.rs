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

#[cfg(test)]
mod tests {
    use crate::{LoadOptions, PolicySet, Request, Store, Verdict};

    use super::*;

    fn policy(text: &str, name: &str) -> Arc<Policy> {
        Arc::clone(PolicySet::from_text("t", text).unwrap().get(name).unwrap())
    }

    #[test]
    fn a_bundle_replaces_every_policy_at_once_with_its_stamp() {
        let store = Store::empty(LoadOptions::default());
        store
            .update("old", r#"policy old { allow "ops/status" }"#)
            .unwrap();
        let swaps = store.subscribe();
        let stamp = BundleStamp {
            revision: "v1".into(),
            digest: "sha256:00".into(),
        };
        let generation = store.install_bundle(
            stamp.clone(),
            vec![(
                "ops".into(),
                policy(r#"policy ops { allow "ops/status" }"#, "ops"),
                "teams/ops.mcppol".into(),
                "sha256:11".into(),
            )],
        );
        assert_eq!(generation, 2);
        let notice = swaps.try_recv().unwrap();
        assert_eq!(
            (notice.loaded, notice.removed),
            (vec!["ops".to_string()], vec!["old".to_string()])
        );
        let (found, stamped) = store.get_stamped("ops");
        assert_eq!(stamped.as_deref(), Some(&stamp));
        let d = found.unwrap().decide(&Request::tool("ops", "status"));
        assert_eq!(d.decision, Verdict::Allow);
        assert_eq!(store.names(), ["ops"]);
        let status = store.status();
        let ops = status.policy("ops").unwrap();
        assert_eq!(ops.digest, "sha256:11");
        assert_eq!(
            ops.file.as_deref(),
            Some(std::path::Path::new("teams/ops.mcppol"))
        );
        // An update keeps the stamp of the snapshot it replaces.
        store
            .update("extra", r#"policy extra { allow "x/y" }"#)
            .unwrap();
        assert_eq!(store.get_stamped("extra").1.as_deref(), Some(&stamp));
    }
}
