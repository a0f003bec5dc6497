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
//! Every server counts, trusted or not: `trusted` in a policy is about a
//! server's annotations, not about what its output may carry; a policy
//! that does not mind one server's output says `tainted(ignore: [...])`.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The servers whose results this session (or principal) has seen.
#[derive(Debug, Default)]
pub(crate) struct Taint {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    servers: BTreeSet<String>,
    /// When a result last added to (or confirmed) the taint.
    last: Option<Instant>,
    /// `None`: kept for the session's life.
    ttl: Option<Duration>,
}

impl Taint {
    /// A principal's taint, forgotten `ttl` after its last result.
    #[cfg(feature = "http")]
    pub(crate) fn expiring(ttl: Duration) -> Taint {
        let t = Taint::default();
        t.expire_after(ttl);
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
    pub(crate) fn add(&self, server: &str) {
        let now = Instant::now();
        let mut inner = self.lock();
        Self::expire(&mut inner, now);
        inner.last = Some(now);
        if !inner.servers.contains(server) {
            tracing::debug!(target: "mcppol::gateway", server, "the session is tainted by a server's output");
            inner.servers.insert(server.to_string());
        }
    }

    /// The servers, for a call's `CallOptions::taint`.
    pub(crate) fn servers(&self) -> Vec<String> {
        let mut inner = self.lock();
        Self::expire(&mut inner, Instant::now());
        inner.servers.iter().cloned().collect()
    }

    /// Whether the taint is empty and may be dropped (a principal's that
    /// expired).
    #[cfg(feature = "http")]
    pub(crate) fn is_clean(&self) -> bool {
        self.servers().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taint_only_grows_and_names_each_server_once() {
        let t = Taint::default();
        assert!(t.servers().is_empty());
        t.add("everything");
        t.add("memory");
        t.add("everything");
        assert_eq!(t.servers(), ["everything", "memory"]);
    }

    #[test]
    fn a_principals_taint_lasts_its_ttl_from_the_last_result() {
        let t = Taint::default();
        t.expire_after(Duration::from_millis(300));
        t.add("everything");
        std::thread::sleep(Duration::from_millis(200));
        // A new result starts the time again, for the whole set.
        t.add("memory");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(t.servers(), ["everything", "memory"]);
        std::thread::sleep(Duration::from_millis(150));
        assert!(t.servers().is_empty(), "forgotten once the time is over");
        t.add("fs");
        assert_eq!(t.servers(), ["fs"]);
    }
}
