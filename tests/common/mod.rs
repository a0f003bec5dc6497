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

/// Words of the language, and pieces of them, to build token soup from:
/// property tests join random picks of these into text the parser must
/// survive (and, for the fast parser, agree with pest on).
pub const WORDS: &[&str] = &[
    "policy",
    "p",
    "{",
    "}",
    "deny",
    "ask",
    "allow",
    "\"a/b\"",
    "\"*\"",
    "*",
    ",",
    "when",
    "unless",
    "and",
    "or",
    "not",
    "(",
    ")",
    "args.x",
    "args[\"k\"]",
    "args.l[0]",
    "principal",
    "assigns.r",
    "annotation.read_only",
    "host.h",
    "tainted",
    "tainted(ignore: [\"d\"])",
    "exists",
    "in",
    "[1, \"a\"]",
    "matches",
    "/a+/",
    "inside",
    "escapes",
    "\"/srv\"",
    "==",
    "<",
    ">=",
    "1",
    "-2.5e3",
    "true",
    "null",
    "default",
    "ask",
    "scope",
    "tools",
    "resources",
    "trusted",
    "all",
    "pin_tools",
    "on",
    "resource",
    "prompt",
    "~",
    ";",
    ":",
    "id:",
    "#c\n",
    "\n",
    "\"",
    "/",
    "[",
    "]",
    // More of the language, for the fast parser's corners.
    "include",
    "exclude",
    "insde",
    "allow_new_tools",
    "ignore",
    "{\"k\": [true, null]}",
    "012",
    "-0.5",
    "\"\\u00e9\"",
    ".",
    "x",
    "!=",
    "<=",
    "\"a\" ~ /^b\\//",
];

/// [`capture_logs`] for async code: runs `f` on the current task with a
/// capturing subscriber (current-thread runtimes run spawned tasks on
/// the same thread, so their events are captured too).
pub async fn capture_logs_async<F: std::future::Future<Output = ()>>(
    level: tracing::Level,
    f: F,
) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    f.await;
    drop(guard);
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8_lossy(&bytes).into_owned()
}
