//! The integration tests, in one test binary: one module per area, the
//! helpers of `common` shared once. One binary links once, where one per
//! file linked the crate and its dependencies 30 times over: after a change
//! to `src/`, `cargo test --no-run` took 50-55 s (31 executables, about
//! 24 MB each) and takes about 26 s now (4 executables; this one is 47 MB),
//! on the 2 shared cores of the session that measured it.
//!
//! A module that needs a cargo feature (the `mcppol` binary is built with
//! `cli`) is compiled only with it, so `cargo test --no-default-features`
//! runs what a decide-only build can. Three tests stay out of this binary,
//! because they measure the whole process: `tests/runaway.rs` and
//! `tests/allocations.rs` install a counting global allocator, whose counts
//! would take in every other test's allocations here, and `tests/load.rs`
//! checks that the RSS stays flat.
//!
//! Snapshots (`snapshots/suite__MODULE__NAME.snap`) and proptest
//! regression files (`MODULE.proptest-regressions`) live beside the
//! modules; the fixtures stay in `tests/fixtures/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[cfg(feature = "cli")]
mod authoring_cli;
#[cfg(feature = "pipeline")]
mod budgets;
#[cfg(feature = "cli")]
mod bundle;
#[cfg(all(feature = "cli", feature = "pipeline", feature = "http"))]
mod bundle_front_doors;
#[cfg(all(feature = "cli", feature = "http"))]
mod bundle_serve;
#[cfg(feature = "pipeline")]
mod claude_command_hooks;
#[cfg(feature = "cli")]
mod claude_hook;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cli_explain_and_check;
#[cfg(feature = "cli")]
mod cli_inputs;
#[cfg(feature = "cli")]
mod cli_uris_and_paths;
#[cfg(feature = "cli")]
mod cwd_root;
mod diagnostics;
#[cfg(feature = "cli")]
mod docs_examples;
mod explain_agrees;
#[cfg(feature = "pipeline")]
mod faults;
mod fmt;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod gateway;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod gateway_e2e;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_http;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_liveness;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_load;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_sdk_http;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_servers_2026;
#[cfg(all(feature = "cli", feature = "http"))]
mod gateway_stateless;
#[cfg(feature = "cli")]
mod hosts;
#[cfg(feature = "cli")]
mod hosts_corpus;
#[cfg(feature = "cli")]
mod language_cases;
mod library_errors;
#[cfg(feature = "pipeline")]
mod limits;
#[cfg(feature = "cli")]
mod lint;
mod loose_matching;
#[cfg(feature = "pipeline")]
mod mcp_stdio;
#[cfg(feature = "otel")]
mod otlp;
#[cfg(feature = "pipeline")]
mod pipeline;
#[cfg(feature = "pipeline")]
mod pipeline_recipes;
mod properties;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_e2e;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_faults;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_load;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_outcome;
mod proxy_relay;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_servers;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod proxy_shown;
#[cfg(all(feature = "cli", feature = "http", feature = "redis-state"))]
mod redis_approved;
#[cfg(all(feature = "cli", feature = "http", feature = "redis-state"))]
mod redis_shared;
#[cfg(all(feature = "cli", feature = "http", feature = "redis-state"))]
mod redis_state;
#[cfg(feature = "http")]
mod remote_e2e;
mod robustness;
#[cfg(feature = "cli")]
mod roots;
mod semantics;
mod semantics_edge_cases;
#[cfg(all(feature = "cli", feature = "http"))]
mod serve;
#[cfg(feature = "store")]
mod store;
#[cfg(feature = "store")]
mod store_inputs;
#[cfg(feature = "store")]
mod store_logs;
#[cfg(feature = "store")]
mod store_notify;
#[cfg(feature = "cli")]
mod tainted_by;
mod telemetry;
#[cfg(all(feature = "cli", feature = "pipeline"))]
mod tools_cli;
