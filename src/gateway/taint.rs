//! The session's taint: the servers whose output reached the host (so, the
//! model's context) in this session. The gateway sees every result, so it
//! keeps this itself; no host has to pass `taint`. It only grows: a server
//! once in the set stays for the session's life (more taint, never less).
//!
//! Every server counts, trusted or not: `trusted` in a policy is about a
//! server's annotations, not about what its output may carry; a policy
//! that does not mind one server's output says `tainted(ignore: [...])`.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The servers whose results this session has seen.
#[derive(Debug, Default)]
pub(crate) struct Taint {
    servers: Mutex<BTreeSet<String>>,
}

impl Taint {
    /// A result (a tool call's, a resource read's, a prompt get's, or the
    /// server's own error) came back from `server`.
    pub(crate) fn add(&self, server: &str) {
        let mut servers = self
            .servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !servers.contains(server) {
            tracing::debug!(target: "mcppol::gateway", server, "the session is tainted by a server's output");
            servers.insert(server.to_string());
        }
    }

    /// The servers, for a call's `CallOptions::taint`.
    pub(crate) fn servers(&self) -> Vec<String> {
        self.servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
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
}
