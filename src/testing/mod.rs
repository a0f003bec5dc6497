//! Policy tests: files of cases, each a request and the decision it must
//! get, run by `mcppol test`. The format is documented in `docs/testing.md`.
//!
//! ```text
//! # policies/filesystem.mcppoltest
//! policy filesystem.mcppol          # (only whole-line comments; this one is not)
//! trust_server
//!
//! case a read inside the sandbox is free
//!   tool fs/read_text_file
//!   args {"path": "/srv/sandbox/notes.txt"}
//!   annotations {"readOnlyHint": true}
//!   expect allow source=allow reason=allow_rule rule_id=read_text
//! ```

mod parse;
mod run;

pub(crate) use run::{
    decision_text as run_decision_text, expect_text as run_expect_text, run_file, FileReport,
};

/// The extension of policy test files.
pub const TEST_EXTENSION: &str = "mcppoltest";
