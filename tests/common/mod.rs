//! Helpers shared by integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

/// Runs `f` with a `tracing` subscriber at `level` and returns what it
/// logged, as plain text.
pub fn capture_logs(level: tracing::Level, f: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
