//! The integration tests, in one test binary: one module per area, the
//! helpers of `common` shared once. One binary links once, where one per
//! file linked the crate and its dependencies 30 times over (see
//! `docs/testing.md`).
//!
//! A module that needs a cargo feature is compiled only with it. The one
//! test kept out of this binary is `tests/runaway.rs`: it installs a
//! counting global allocator, which is per process, and its byte counts
//! would take in every other test's allocations here.
//!
//! Snapshots (`snapshots/suite__MODULE__NAME.snap`) and proptest
//! regression files (`MODULE.proptest-regressions`) live beside the
//! modules; the fixtures stay in `tests/fixtures/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[cfg(feature = "cli")]
mod authoring_cli;
#[cfg(feature = "pipeline")]
mod claude_command_hooks;
#[cfg(feature = "cli")]
mod claude_hook;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cwd_root;
mod diagnostics;
mod docs_examples;
mod explain_agrees;
mod fmt;
mod hardened_cli;
mod hardening_cli;
mod library_errors;
#[cfg(feature = "cli")]
mod lint;
mod loose_matching;
#[cfg(feature = "pipeline")]
mod mcp_stdio;
#[cfg(feature = "pipeline")]
mod pipeline;
#[cfg(feature = "pipeline")]
mod pipeline_recipes;
mod properties;
mod robustness;
mod roots;
mod semantics;
mod semantics_hardening;
#[cfg(feature = "store")]
mod store;
mod store_inputs;
#[cfg(feature = "store")]
mod store_logs;
mod store_notify;
mod tainted_by;
mod telemetry;
