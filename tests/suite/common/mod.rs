//! Helpers shared by integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod case;

use std::sync::{Arc, Mutex};

/// The `mcppol` binary of this build (cargo gives the tests its path): the
/// one way every test runs it. A test that drives it over pipes spawns
/// `std::process::Command::new(MCPPOL)`; one that runs it to its end uses
/// [`mcppol`].
#[cfg(feature = "cli")]
pub const MCPPOL: &str = env!("CARGO_BIN_EXE_mcppol");

/// `mcppol`, to run to its end and check its output and status
/// (`assert_cmd`: `write_stdin`, `timeout`, `assert`).
#[cfg(feature = "cli")]
pub fn mcppol() -> assert_cmd::Command {
    assert_cmd::Command::new(MCPPOL)
}

/// Runs `f` with a `tracing` subscriber at `level` and returns what it
/// logged, as plain text.
pub fn capture_logs(level: tracing::Level, f: impl FnOnce()) -> String {
    let (captured, subscriber) = capturing(level);
    tracing::subscriber::with_default(subscriber, f);
    captured.text()
}

/// A plain-text subscriber at `level` whose output lands in the returned
/// buffer.
fn capturing(level: tracing::Level) -> (Captured, impl tracing::Subscriber + Send + Sync) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (captured, subscriber)
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[allow(unused_imports)] // not every test binary uses it
pub use mcppol::test_util::words::WORDS;

/// [`capture_logs`] for async code: runs `f` on the current task with a
/// capturing subscriber (current-thread runtimes run spawned tasks on
/// the same thread, so their events are captured too).
pub async fn capture_logs_async<F: std::future::Future<Output = ()>>(
    level: tracing::Level,
    f: F,
) -> String {
    let (captured, subscriber) = capturing(level);
    let guard = tracing::subscriber::set_default(subscriber);
    f.await;
    drop(guard);
    captured.text()
}
