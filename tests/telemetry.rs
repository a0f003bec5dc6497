//! Every decision emits a `tracing` event with the decision, source, reason
//! and rule id, and never the arguments.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcppol::{PolicySet, Request};
use serde_json::json;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn decisions_are_traced_without_their_arguments() {
    let set = PolicySet::from_text(
        "t.mcppol",
        r#"policy p { deny guard: "fs/*" when args.path escapes "/srv" }"#,
    )
    .unwrap();
    let policy = set.get("p").unwrap();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let args = json!({"path": "/home/alice/secret-plans.txt"});
    tracing::subscriber::with_default(subscriber, || {
        policy.decide(&Request::tool("fs", "read").with_args(&args));
    });
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for field in [
        "decision=\"deny\"",
        "source=\"deny\"",
        "reason=\"deny_rule\"",
        "rule_id=\"guard\"",
        "policy=p",
    ] {
        assert!(text.contains(field), "missing {field} in {text}");
    }
    assert!(!text.contains("secret-plans"), "arguments leaked: {text}");
}
