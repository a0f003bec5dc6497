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

pub mod claude;
#[cfg(feature = "cli")]
pub mod cli;
pub mod compile;
pub mod diagnostics;
pub mod eval;
pub mod fingerprint;
pub mod fmt;
pub mod host;
pub mod lint;
pub(crate) mod listing;
#[cfg(feature = "pipeline")]
pub mod mcp;
pub mod paths;
#[cfg(feature = "pipeline")]
pub mod pipeline;
pub mod policy;
#[cfg(feature = "store")]
pub mod store;
pub mod syntax;
pub mod testing;

/// The README's Rust examples, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

use std::path::Path;
use std::sync::Arc;

pub use compile::LoadOptions;
pub use diagnostics::{Diagnostic, LoadError, Severity, SourceFile};
pub use eval::{Decision, Reason, Request, Source, Verdict};
pub use fingerprint::{fingerprint, Lock, ToolApproval};
pub use host::HostPredicates;
pub use policy::{PickError, Policy, PolicySet};
pub use syntax::TargetKind;

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
                "mcppol::io",
                syntax::Span::default(),
                message,
            )
            .with_help("check the path and its permissions")])
        })?;
        compile::load(SourceFile::new(origin, text), options)
    }
}

/// Reads a policy file, refusing one too large to be a policy before it is
/// read whole.
pub fn read_policy_file(path: &Path) -> Result<String, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if meta.len() > syntax::MAX_FILE_BYTES as u64 {
        return Err(format!(
            "`{}` is {} bytes, more than the {} a policy file may have",
            path.display(),
            meta.len(),
            syntax::MAX_FILE_BYTES
        ));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| format!("`{}` is not UTF-8 text: {e}", path.display()))
}

impl Policy {
    /// Decides one request.
    pub fn decide(&self, request: &Request<'_>) -> Decision {
        eval::decide(self, request)
    }

    /// Explains one request: every rule considered, why it matched or not,
    /// and the decision (always the one [`Policy::decide`] gives). Not for
    /// the hot path: it walks every rule and keeps a trace.
    pub fn explain(&self, request: &Request<'_>) -> eval::explain::Explanation {
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
