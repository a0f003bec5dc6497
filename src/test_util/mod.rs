//! What the crate's own tests and benches share, in one dev-only place:
//! the policy and request generator (`gen`), the parser's token soup
//! (`words`) and the formatter's checks (`fmt_check`). Public with the
//! feature `test-util` (which `cargo test` and `cargo bench` turn on by a
//! self dev-dependency), compiled for the unit tests otherwise; never in a
//! production build.

// A failed check here is the calling test's failure, said at once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers: a failure is the calling test's"
)]

pub mod fmt_check;
pub mod gen;
pub mod words;
