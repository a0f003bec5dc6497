//! The core of one governed request, shared by every enforcement point:
//!
//! - [`Outcome`]: how a request ended, whatever refused or allowed it
//!   (visibility, a hook, validation, the policy, the pin, an approval, a
//!   grant, the audit itself), with [`Settled`] saying how an ask was
//!   settled and [`By`] who settled it;
//! - the audit record and line, a mapping of the outcome (`audit.rs`);
//! - the one renderer, outcome to words (`render.rs`);
//! - the one runner of commands that speak JSON over `sh -c`
//!   (`command.rs`), under which the Claude-style command hooks and the
//!   proxy's approver command each keep their own protocol.
//!
//! A front door (the pipeline's host, the proxy, the Claude hook, the
//! command line) maps the outcome to its wire and decides nothing itself.

pub(crate) mod audit;
#[cfg(feature = "pipeline")]
pub(crate) mod command;
mod outcome;
pub(crate) mod render;

pub use audit::AuditRecord;
pub use outcome::{By, Outcome, Settled};
