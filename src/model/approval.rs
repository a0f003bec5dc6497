//! Where a tool stands against its approved fingerprint: what a request
//! tells the pin and the new-tool rule. The fingerprints and the lock file
//! that give it are `crate::fingerprint`'s; a request only carries the
//! answer.

use serde::Serialize;

/// Where a tool stands against the approved fingerprints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolApproval {
    /// Approved as it is now.
    #[default]
    Approved,
    /// Approved once, but its definition has changed since (a rug pull).
    Changed,
    /// Never approved.
    New,
}
