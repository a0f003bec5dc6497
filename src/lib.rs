//! mcppol: policy-as-data for the tool calls AI agents make over MCP.
//!
//! A `.mcppol` file says which tool calls, resource reads and prompt gets an
//! agent may make: `deny`, `ask` (a person approves) or `allow`, with a fixed
//! precedence (`deny > pin > ask > allow > default`). This crate parses and
//! compiles such files and decides requests against them.
//!
//! ```
//! use mcppol::{PolicySet, Request, Verdict};
//!
//! let policies = PolicySet::from_text("example.mcppol", r#"
//!     policy main {
//!       deny  "*/delete_repo"
//!       allow "github/get_*"
//!     }
//! "#).map_err(|e| e.render(false))?;
//! let policy = policies.get("main").ok_or("no policy")?;
//!
//! let decision = policy.decide(&Request::tool("github", "get_user"));
//! assert_eq!(decision.decision, Verdict::Allow);
//! assert_eq!(decision.rule_id.as_deref(), Some("allow:0"));
//!
//! // Deny rules match loosely: case and `-`, `.`, `_` do not matter.
//! let decision = policy.decide(&Request::tool("github", "Delete-Repo"));
//! assert_eq!(decision.decision, Verdict::Deny);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![deny(missing_docs)]

// The pest parser is generated without its `std` feature (so without its
// per-call stack probe, see `syntax`): its code names `alloc`.
extern crate alloc;

// Every module is private: what a host uses is re-exported below, so an
// internal rename is never a breaking change.
// Claude Code's permission hook, run by `mcppol claude-hook`.
/// Budgets (`limit` rules) at run time: the counters and their store.
pub mod budget;
#[cfg(feature = "cli")]
mod claude;
#[cfg(feature = "cli")]
mod cli;
// `mcppol hook HOST`: every agent host's permission hook.
// Signed policy bundles: `mcppol bundle`, and `--bundle` of the front doors.
#[cfg(feature = "bundle")]
mod bundle;
mod compile;
mod diagnostics;
#[cfg(feature = "cli")]
mod hosts;
// The core of one governed request: the outcome, the audit record, the
// renderer, the command runner (what the hook, the proxy and the pipeline
// share). Without the pipeline, only the Claude hook maps outcomes (no
// asks to settle, no refusals to carry), and a host that only decides
// uses the renderer's `refusal_text` alone.
#[cfg_attr(not(feature = "pipeline"), allow(dead_code, unused_imports))]
mod enforce;
mod escape;
mod eval;
mod fingerprint;
mod fmt;
/// Internals for the fuzz targets under `fuzz/` (feature `fuzzing`, never a
/// default): not API. Without the feature it is compiled only for the
/// unit tests (the formatter's share its `meaning`), private.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod fuzzing;
#[cfg(all(test, not(feature = "fuzzing")))]
#[allow(dead_code, unused_imports)]
mod fuzzing;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod gateway;
#[cfg(feature = "http")]
pub mod http_auth;
mod io;
mod limits;
mod lint;
mod listing;
mod model;
// The governed call and MCP on the wire: public modules of their own (a
// host API with many types), compiled with the `pipeline` feature.
#[cfg(feature = "pipeline")]
pub mod mcp;
#[cfg(feature = "otel")]
mod otel;
mod paths;
#[cfg(feature = "pipeline")]
pub mod pipeline;
mod policy;
#[cfg(any(feature = "cli", feature = "pipeline"))]
mod protected;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy;
#[cfg(feature = "pipeline")]
pub mod servers;
// Grants and taint shared by replicas (`--state`): the gateway's and the
// command line's.
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod shared_state;
mod shell;
#[cfg(feature = "store")]
mod store;
mod syntax;
/// What the crate's own tests and benches share (feature `test-util`):
/// the policy and request generator, the parser's token soup, the
/// formatter's checks. For tests; not a stable API.
#[cfg(feature = "test-util")]
pub mod test_util;
#[cfg(all(test, not(feature = "test-util")))]
mod test_util;
#[cfg(feature = "cli")]
mod testing;
mod uri;

/// The README's Rust examples, compiled and run as doc tests (they use
/// the store, the pipeline and its test doubles, so only in a build with
/// `test-util`, which `cargo test` turns on).
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "test-util"))]
pub struct ReadmeDoctests;

/// The pipeline guide's Rust examples, compiled and run as doc tests
/// (with `test-util`, as the README's).
#[doc = include_str!("../docs/pipeline.md")]
#[cfg(all(doctest, feature = "test-util"))]
pub struct PipelineDoctests;

use std::path::Path;
use std::sync::Arc;

pub use budget::{Budgets, MemoryBudgets};
pub use compile::{LoadOptions, REGEX_BUDGET, REGEX_SIZE_LIMIT};
pub use diagnostics::codes::{
    lookup as diagnostic_code, Code as DiagnosticCode, ALL as DIAGNOSTIC_CODES,
};
pub use diagnostics::{render_all, Diagnostic, LoadError, Severity, SourceFile};
pub use enforce::render::refusal_text;
pub use eval::explain::{ExplainStep, Explanation, Note, Outcome, Stage};
pub use eval::{Decision, Reason, Request, Source, Tri, Verdict};
pub use fingerprint::{fingerprint, FingerprintError, Lock, ToolApproval};
pub use fmt::{format, FmtError};
pub use limits::MAX_RULES;
pub use lint::{check_text, Lint, LintOptions, Listing, ListingError, LINTS};
pub use model::{HostPredicate, HostPredicates};
pub use model::{Span, TargetKind};
pub use paths::{LinkResolver, Links};
pub use policy::{BudgetScope, Limit};
pub use policy::{DefaultDecision, PickError, Policy, PolicySet, Scope, Settings, Trusted};
#[cfg(any(feature = "cli", feature = "pipeline"))]
pub use protected::Protected;
/// The string type of [`Decision::rule_id`], [`Decision::policy`] and
/// [`ExplainStep::rule_id`] (from the `smol_str` crate, re-exported so a
/// host need not depend on it): up to 23 bytes are held inline, so a
/// decision copies its rule id and policy name instead of counting
/// references. It derefs to `&str`; `as_deref()` on the `Option` gives
/// `Option<&str>`.
pub use smol_str::SmolStr;
#[cfg(feature = "store")]
pub use store::{
    BundleStamp, FileStatus, LastError, PolicyStatus, Reloaded, Status, Store, StoreError, Swapped,
    Watch, SUBSCRIBER_BACKLOG,
};
pub use syntax::MAX_FILE_BYTES;

/// The command line, for the `mcppol` binary only: not part of the API.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub fn __cli_main() -> std::process::ExitCode {
    cli::main()
}

impl PolicySet {
    /// Parses and compiles policy text. `origin` names the text in
    /// diagnostics (usually its file name).
    pub fn from_text(origin: &str, text: &str) -> Result<PolicySet, LoadError> {
        Self::from_text_with(origin, text, &LoadOptions::default())
    }

    /// Like [`PolicySet::from_text`], with the host's predicates: then
    /// `host.NAME` must name a registered predicate.
    pub fn from_text_with(
        origin: &str,
        text: &str,
        options: &LoadOptions,
    ) -> Result<PolicySet, LoadError> {
        compile::load(SourceFile::new(origin, text), options)
    }

    /// Reads, parses and compiles a policy file.
    pub fn from_file(path: &Path, options: &LoadOptions) -> Result<PolicySet, LoadError> {
        let origin = path.display().to_string();
        let text = read_policy_file(path).map_err(|message| {
            let source = SourceFile::new(origin.clone(), String::new());
            LoadError::new(vec![Diagnostic::error(
                &source,
                crate::diagnostics::codes::IO_READ,
                syntax::Span::default(),
                message,
            )
            .with_help("check the path and its permissions")])
        })?;
        compile::load(SourceFile::new(origin, text), options)
    }
}

/// Reads a policy file: a regular file only (not a folder, FIFO or
/// device, nor a link to one), and never more than
/// [`syntax::MAX_FILE_BYTES`], whatever its metadata says.
pub(crate) fn read_policy_file(path: &Path) -> Result<String, String> {
    io::read_text(path, syntax::MAX_FILE_BYTES as u64, "policy file")
}

impl Policy {
    /// Decides one request.
    pub fn decide(&self, request: &Request<'_>) -> Decision {
        eval::decide(self, request)
    }

    /// Explains one request: every rule considered, why it matched or not,
    /// and the decision (always the one [`Policy::decide`] gives). Not for
    /// the hot path: it walks every rule and keeps a trace.
    pub fn explain(&self, request: &Request<'_>) -> Explanation {
        eval::explain::explain(self, request)
    }
}

/// Decides a request against an optional policy: a request naming a policy
/// that is not loaded is denied with `reason: no_policy`.
pub fn decide(policy: Option<&Arc<Policy>>, request: &Request<'_>) -> Decision {
    match policy {
        Some(p) => p.decide(request),
        None => Decision::no_policy(),
    }
}
