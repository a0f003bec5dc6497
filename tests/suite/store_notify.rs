//! A host is told when the store swaps in new policies: `Store::subscribe`
//! gives a channel that receives one notice a swap. No sleeps: every swap
//! here is made on the test's own thread (`update`, `reload`), so the notice
//! is in the channel when the call returns; `recv_timeout` only guards
//! against a hang.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use mcppol::LoadOptions;
use mcppol::{Store, Swapped, SUBSCRIBER_BACKLOG};

const GUARD: Duration = Duration::from_secs(10);

fn next(rx: &Receiver<Swapped>) -> Swapped {
    rx.recv_timeout(GUARD).expect("a notice")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn an_update_by_name_is_notified_and_a_bad_one_is_not() {
    let store = Store::empty(LoadOptions::default());
    let rx = store.subscribe();
    let generation = store
        .update("ops", r#"policy ops { allow "ops/status" }"#)
        .unwrap();
    let notice = next(&rx);
    assert_eq!(
        notice,
        Swapped {
            generation,
            loaded: names(&["ops"]),
            removed: vec![],
            file: None,
        }
    );
    assert!(store.update("ops", "policy ops { allow }").is_err());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "nothing swapped");
    assert_eq!(store.generation(), generation);
}

#[test]
fn a_reloaded_file_names_its_policies_loaded_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.mcppol");
    std::fs::write(&file, "policy a { }\npolicy b { }\n").unwrap();
    let store = Store::open([dir.path()], LoadOptions::default()).unwrap();
    let rx = store.subscribe();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "open is before");

    std::fs::write(&file, "policy a { default deny }\npolicy c { }\n").unwrap();
    let reloaded = store.reload();
    assert_eq!(reloaded.loaded, 1);
    let notice = next(&rx);
    assert_eq!(notice.generation, store.generation());
    assert_eq!(notice.loaded, names(&["a", "c"]));
    assert_eq!(notice.removed, names(&["b"]));
    assert_eq!(
        notice
            .file
            .as_deref()
            .map(|p| p.file_name().unwrap().to_owned()),
        Some("team.mcppol".into())
    );

    // The same text again swaps nothing.
    store.reload();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    // A text that does not load swaps nothing either.
    std::fs::write(&file, "policy a {").unwrap();
    assert_eq!(store.reload().failed, 1);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn every_subscriber_hears_and_a_dropped_one_is_forgotten() {
    let store = Store::empty(LoadOptions::default());
    let first = store.subscribe();
    let second = store.subscribe();
    drop(second);
    store.update("p", "policy p { }").unwrap();
    assert_eq!(next(&first).loaded, names(&["p"]));
}

#[test]
fn a_subscriber_that_never_reads_does_not_block_the_store() {
    let store = Store::empty(LoadOptions::default());
    let rx = store.subscribe();
    let swaps = SUBSCRIBER_BACKLOG + 10;
    for k in 0..swaps {
        store
            .update("p", &format!("policy p {{ allow \"s/t{k}\" }}"))
            .unwrap();
    }
    assert_eq!(store.generation(), swaps as u64);
    let held: Vec<Swapped> = rx.try_iter().collect();
    assert_eq!(held.len(), SUBSCRIBER_BACKLOG);
    assert_eq!(held[0].generation, 1);
    // Still subscribed once read.
    store.update("p", "policy p { }").unwrap();
    assert_eq!(next(&rx).generation, swaps as u64 + 1);
}
