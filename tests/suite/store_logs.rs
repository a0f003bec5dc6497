//! The store's logs: a text that does not load is a `tracing` error that
//! carries the rendered diagnostic, logged once; a removed file is a
//! warning. In its own test binary: `tracing` caches per call site whether
//! anyone listens, and tests in other threads without a subscriber would
//! race with the one this test installs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use mcppol::{LoadOptions, Request, Store};

fn version(k: u32) -> String {
    format!("policy p {{\n  default deny\n  allow v_{k}: \"s/call\"\n}}\n")
}

fn answering_version(store: &Store) -> Option<u32> {
    let d = store.decide("p", &Request::tool("s", "call"));
    d.rule_id.as_deref()?.strip_prefix("v_")?.parse().ok()
}

#[test]
fn a_text_that_does_not_load_is_logged_as_an_error_with_its_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, version(1)).unwrap();
    let store = Store::open([&path], LoadOptions::default()).unwrap();
    let log = common::capture_logs(tracing::Level::WARN, || {
        std::fs::write(&path, "policy p {\n  defualt deny\n}\n").unwrap();
        assert_eq!(store.reload().failed, 1);
        // The same bad text read again is not logged again.
        store.reload();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(store.reload().removed, 1);
    });
    assert_eq!(log.matches("ERROR").count(), 1, "{log}");
    assert!(
        log.contains("policy file did not load; the last good version stays in force"),
        "{log}"
    );
    assert!(log.contains(&format!("{}:2:3", path.display())), "{log}");
    assert!(log.contains("unknown setting `defualt`"), "{log}");
    assert!(log.contains("did you mean `default`?"), "{log}");
    assert!(
        log.contains("WARN") && log.contains("policy file removed"),
        "{log}"
    );
    assert_eq!(answering_version(&store), Some(1));
}
