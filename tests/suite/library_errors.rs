//! What a host sees of mcppol's errors when its `main` returns one: Rust
//! prints `Error: {:?}`, so `Debug` of `LoadError` and `StoreError` must be
//! the drawn diagnostics (file, line, snippet, help), not a structure dump.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcppol::PolicySet;
#[cfg(feature = "store")]
use mcppol::{LoadOptions, Store};

const BAD: &str = "policy p {\n  deny \"a/b\" \"c\"\n}\n";

#[test]
fn a_load_error_debugs_as_its_drawing() {
    let err = PolicySet::from_text("team.mcppol", BAD).unwrap_err();
    let shown = format!("{err:?}");
    assert!(shown.starts_with("the policy did not load:"), "{shown}");
    assert!(shown.contains("team.mcppol:2:"), "{shown}");
    assert!(shown.contains("help:"), "{shown}");
    assert!(!shown.contains("SourceFile"), "{shown}");
    assert!(!shown.contains("diagnostics:"), "{shown}");
    // A `Box<dyn Error>` (what `?` makes in `main`) shows the same.
    let boxed: Box<dyn std::error::Error> = Box::new(err);
    assert_eq!(format!("{boxed:?}"), shown);
}

#[cfg(feature = "store")]
#[test]
fn a_store_error_debugs_as_its_drawing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("team.mcppol"), BAD).unwrap();
    let err = Store::open([dir.path()], LoadOptions::default()).unwrap_err();
    let shown = format!("{err:?}");
    assert_eq!(shown, err.to_string());
    assert!(shown.contains("team.mcppol:2:"), "{shown}");
    assert!(!shown.contains("Load(LoadError"), "{shown}");
    let miette: &dyn miette::Diagnostic = &err;
    assert_eq!(miette.related().map(Iterator::count), Some(1));
}
