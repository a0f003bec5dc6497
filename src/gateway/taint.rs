//! The session's taint: the servers whose output reached the host (so, the
//! model's context) in this session. The gateway sees every result, so it
//! keeps this itself; no host has to pass `taint`. It only grows: a server
//! once in the set stays for the session's life (more taint, never less).
//!
//! A host that speaks 2026-07-28 has no session: its taint is its
//! principal's, kept for `--taint-ttl` after the last result that added to
//! it (each new result starts the time again), then forgotten as a whole.
//! Forgetting only happens once nothing was added for the whole time, so a
//! busy principal's taint never shrinks.
//!
//! With `--state redis://` the set is also kept in Redis (a principal's
//! under its principal, so every replica sees it; a session's under its
//! id, for `--taint-ttl` after its last result): what a call sees is this
//! replica's set and the shared one together, and a shared set that cannot
//! be read makes the taint unknown, so every `tainted` test fails closed.
//! A result whose taint could not be written is written again with the
//! next result or read.
//!
//! Every server counts, trusted or not: `trusted` in a policy is about a
//! server's annotations, not about what its output may carry; a policy
//! that does not mind one server's output says `tainted(ignore: [...])`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::shared_state::TaintSets;

/// The servers whose results this session (or principal) has seen.
#[derive(Default)]
pub(crate) struct Taint {
    inner: Mutex<Inner>,
    /// Where replicas share it, and under which key.
    shared: Option<(Arc<dyn TaintSets>, String)>,
}

impl std::fmt::Debug for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taint")
            .field("inner", &self.inner)
            .field("shared", &self.shared.as_ref().map(|(_, key)| key))
            .finish()
    }
}

#[derive(Debug, Default)]
struct Inner {
    servers: BTreeSet<String>,
    /// When a result last added to (or confirmed) the taint.
    last: Option<Instant>,
    /// `None`: kept for the session's life.
    ttl: Option<Duration>,
    /// The shared set's time to live (`--taint-ttl`).
    shared_ttl: Duration,
}

/// What a call is told of the taint.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TaintRead {
    /// The servers, in order.
    pub(crate) servers: Vec<String>,
    /// The shared set could not be read: `tainted` fails closed.
    pub(crate) unknown: bool,
}

impl Taint {
    /// A principal's taint, forgotten `ttl` after its last result; shared
    /// under the principal's key when `shared` is given.
    #[cfg(feature = "http")]
    pub(crate) fn expiring(
        ttl: Duration,
        principal: Option<&str>,
        shared: Option<Arc<dyn TaintSets>>,
    ) -> Taint {
        let t = Taint::kept(
            shared.map(|s| (s, crate::shared_state::taint_key("p", principal))),
            ttl,
        );
        t.expire_after(ttl);
        t
    }

    /// A session's taint; shared under the session's key when both are
    /// given (a session without an id, over stdio, keeps its own).
    pub(crate) fn session(
        id: Option<&str>,
        shared: Option<Arc<dyn TaintSets>>,
        ttl: Duration,
    ) -> Taint {
        let shared = match (shared, id) {
            (Some(s), Some(id)) => Some((s, crate::shared_state::taint_key("s", Some(id)))),
            _ => None,
        };
        Taint::kept(shared, ttl)
    }

    fn kept(shared: Option<(Arc<dyn TaintSets>, String)>, ttl: Duration) -> Taint {
        let t = Taint {
            inner: Mutex::default(),
            shared,
        };
        t.lock().shared_ttl = ttl;
        t
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// From now on the taint is forgotten `ttl` after its last result (the
    /// session's host turned out to be stateless).
    pub(crate) fn expire_after(&self, ttl: Duration) {
        self.lock().ttl = Some(ttl);
    }

    /// Forgets the whole set once its time is over.
    fn expire(inner: &mut Inner, now: Instant) {
        if let (Some(ttl), Some(last)) = (inner.ttl, inner.last) {
            if now.saturating_duration_since(last) >= ttl {
                inner.servers.clear();
                inner.last = None;
            }
        }
    }

    /// A result (a tool call's, a resource read's, a prompt get's, or the
    /// server's own error) came back from `server`.
    pub(crate) async fn add(&self, server: &str) {
        let (servers, ttl) = {
            let now = Instant::now();
            let mut inner = self.lock();
            Self::expire(&mut inner, now);
            inner.last = Some(now);
            if !inner.servers.contains(server) {
                tracing::debug!(target: "mcppol::gateway", server, "the session is tainted by a server's output");
                inner.servers.insert(server.to_string());
            }
            let servers: Vec<String> = inner.servers.iter().cloned().collect();
            (servers, inner.shared_ttl)
        };
        if let Some((store, key)) = &self.shared {
            // Every server this replica holds, so that a write that failed
            // before is made good now.
            if let Err(e) = store.add(key, &servers, ttl).await {
                tracing::warn!(target: "mcppol::gateway", error = %e, "the taint could not be shared: other replicas may not see it");
            }
        }
    }

    /// The servers, for a call's `CallOptions::taint`, with whether the
    /// shared part could not be read.
    pub(crate) async fn servers(&self) -> TaintRead {
        let (local, ttl) = {
            let mut inner = self.lock();
            Self::expire(&mut inner, Instant::now());
            let local: BTreeSet<String> = inner.servers.clone();
            (local, inner.shared_ttl)
        };
        let Some((store, key)) = &self.shared else {
            return TaintRead {
                servers: local.into_iter().collect(),
                unknown: false,
            };
        };
        match store.read(key).await {
            Ok(shared) => {
                let shared: BTreeSet<String> = shared.into_iter().collect();
                if !local.is_subset(&shared) {
                    // A write that failed (or a shared set that expired
                    // before this replica's): made good.
                    let all: Vec<String> = local.union(&shared).cloned().collect();
                    let _ = store.add(key, &all, ttl).await;
                }
                TaintRead {
                    servers: local.union(&shared).cloned().collect(),
                    unknown: false,
                }
            }
            Err(e) => {
                tracing::warn!(target: "mcppol::gateway", error = %e, "the taint could not be read: it counts as tainted");
                TaintRead {
                    servers: local.into_iter().collect(),
                    unknown: true,
                }
            }
        }
    }

    /// Whether this replica's taint is empty and may be dropped (a
    /// principal's that expired; a shared copy expires by itself).
    #[cfg(feature = "http")]
    pub(crate) fn is_clean(&self) -> bool {
        let mut inner = self.lock();
        Self::expire(&mut inner, Instant::now());
        inner.servers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{StateFuture, StateUnavailable};

    fn names(read: &TaintRead) -> Vec<&str> {
        read.servers.iter().map(String::as_str).collect()
    }

    #[tokio::test]
    async fn taint_only_grows_and_names_each_server_once() {
        let t = Taint::default();
        assert!(t.servers().await.servers.is_empty());
        t.add("everything").await;
        t.add("memory").await;
        t.add("everything").await;
        assert_eq!(names(&t.servers().await), ["everything", "memory"]);
    }

    #[tokio::test]
    async fn a_principals_taint_lasts_its_ttl_from_the_last_result() {
        let t = Taint::default();
        t.expire_after(Duration::from_millis(300));
        t.add("everything").await;
        std::thread::sleep(Duration::from_millis(200));
        // A new result starts the time again, for the whole set.
        t.add("memory").await;
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(names(&t.servers().await), ["everything", "memory"]);
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            t.servers().await.servers.is_empty(),
            "forgotten once the time is over"
        );
        t.add("fs").await;
        assert_eq!(names(&t.servers().await), ["fs"]);
    }

    /// A shared store of sets in memory that can be switched off.
    #[derive(Default)]
    struct Sets {
        sets: Mutex<std::collections::HashMap<String, BTreeSet<String>>>,
        down: std::sync::atomic::AtomicBool,
    }

    impl Sets {
        fn up(&self) -> Result<(), StateUnavailable> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                Err(StateUnavailable("down".into()))
            } else {
                Ok(())
            }
        }
    }

    impl TaintSets for Sets {
        fn add<'a>(
            &'a self,
            key: &'a str,
            servers: &'a [String],
            _ttl: Duration,
        ) -> StateFuture<'a, ()> {
            let out = self.up().map(|()| {
                let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
                sets.entry(key.to_string())
                    .or_default()
                    .extend(servers.iter().cloned());
            });
            Box::pin(std::future::ready(out))
        }

        fn read<'a>(&'a self, key: &'a str) -> StateFuture<'a, Vec<String>> {
            let out = self.up().map(|()| {
                let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
                sets.get(key)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default()
            });
            Box::pin(std::future::ready(out))
        }
    }

    #[tokio::test]
    async fn a_shared_taint_is_seen_by_every_replica_and_unknown_when_unreadable() {
        let sets = Arc::new(Sets::default());
        let ttl = Duration::from_secs(60);
        let a = Taint::expiring(ttl, Some("dana"), Some(sets.clone()));
        let b = Taint::expiring(ttl, Some("dana"), Some(sets.clone()));
        let omar = Taint::expiring(ttl, Some("omar"), Some(sets.clone()));
        a.add("web").await;
        assert_eq!(names(&b.servers().await), ["web"], "replica B sees A's");
        assert!(omar.servers().await.servers.is_empty(), "per principal");

        sets.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let read = omar.servers().await;
        assert!(read.unknown, "unreadable taint is unknown: {read:?}");
        // A result while the store is down is kept here, and written when
        // the store is back.
        a.add("mail").await;
        assert!(a.servers().await.unknown);
        sets.down.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(names(&a.servers().await), ["mail", "web"]);
        assert_eq!(names(&b.servers().await), ["mail", "web"]);

        // A session's own is shared under its id; without one, not at all.
        let s = Taint::session(Some("s1"), Some(sets.clone()), ttl);
        s.add("fs").await;
        let key = crate::shared_state::taint_key("s", Some("s1"));
        assert!(sets
            .sets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&key));
        let stdio = Taint::session(None, Some(sets.clone()), ttl);
        sets.down.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(
            !stdio.servers().await.unknown,
            "nothing shared, nothing unknown"
        );
    }
}
