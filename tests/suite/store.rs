//! The runtime store on real files: loading, hot reload under load, and the
//! failure rules (a bad text never replaces a good one; a deleted file keeps
//! its policies; an invalid file at start is a clear error).
//!
//! Nothing here asserts on speed: a reload is awaited with a bounded poll
//! on the store's state (at most 10 s).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcppol::{LoadOptions, Reason, Request, Store, StoreError, Verdict, Watch};
use sha2::{Digest, Sha256};

const PATIENCE: Duration = Duration::from_secs(10);

/// Version `k` of policy `p`: its rules' ids carry `k`, so every decision
/// says which version answered.
fn version(k: u32) -> String {
    format!(
        "# version {k}\n\
         policy p {{\n  \
           default deny\n  \
           deny gate_{k}: \"s/blocked\"\n  \
           allow v_{k}: \"s/call\"\n\
         }}\n"
    )
}

/// Texts that must never load: half-written, empty, and wrong in several ways.
fn invalid(k: u32, variant: u32) -> String {
    match variant % 5 {
        0 => {
            let full = version(k);
            full[..full.len() / 2].to_string()
        }
        1 => String::new(),
        2 => format!("policy p {{\n  defualt deny\n  allow v_{k}: \"s/call\"\n}}\n"),
        3 => format!("policy p {{\n  allow v_{k}: \"s/call\" when args.x matches /(/\n}}\n"),
        _ => format!("policy p {{\n  allow v_{k}: \"s/call\"\n"),
    }
}

fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The version of `p` that decides now, read from the allow rule's id.
fn answering_version(store: &Store) -> Option<u32> {
    let d = store.decide("p", &Request::tool("s", "call"));
    d.rule_id.as_deref()?.strip_prefix("v_")?.parse().ok()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn wait_for_version(store: &Store, k: u32) {
    wait_until(&format!("version {k} in force"), || {
        answering_version(store) == Some(k)
    });
}

fn modes() -> [Watch; 2] {
    [
        Watch::Events {
            debounce: Duration::from_millis(20),
        },
        Watch::Poll {
            interval: Duration::from_millis(20),
        },
    ]
}

/// Saves the way editors that write a temporary file and rename it do.
fn rename_over(path: &Path, text: &str) {
    let tmp = path.with_extension("mcppol.tmp~");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn open_one(dir: &Path, text: &str) -> (PathBuf, Store) {
    let path = dir.join("p.mcppol");
    std::fs::write(&path, text).unwrap();
    let store = Store::open([&path], LoadOptions::default()).unwrap();
    (path, store)
}

#[test]
fn opens_files_and_folders_and_decides_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("team/sub")).unwrap();
    std::fs::write(root.join("team/a.mcppol"), "policy a { allow \"s/a\" }").unwrap();
    let two = "policy b { allow \"s/b\" }\npolicy c { deny \"*\" }\n";
    std::fs::write(root.join("team/sub/bc.mcppol"), two).unwrap();
    // Not policy files, or hidden: skipped.
    std::fs::write(root.join("team/notes.txt"), "not a policy").unwrap();
    std::fs::write(root.join("team/.draft.mcppol"), "policy {").unwrap();
    std::fs::create_dir_all(root.join("team/.git")).unwrap();
    std::fs::write(root.join("team/.git/x.mcppol"), "policy {").unwrap();
    let single = root.join("single.mcppol");
    std::fs::write(&single, "policy d { default deny }").unwrap();

    let store = Store::open([root.join("team"), single.clone()], LoadOptions::default()).unwrap();
    assert_eq!(store.names(), ["a", "b", "c", "d"]);
    assert_eq!(
        store.decide("a", &Request::tool("s", "a")).decision,
        Verdict::Allow
    );
    assert_eq!(
        store.decide("b", &Request::tool("s", "b")).decision,
        Verdict::Allow
    );
    assert_eq!(
        store.decide("c", &Request::tool("s", "b")).reason,
        Reason::DenyRule
    );
    let missing = store.decide("nope", &Request::tool("s", "a"));
    assert_eq!(
        (missing.decision, missing.reason),
        (Verdict::Deny, Reason::NoPolicy)
    );
    assert!(store.get("nope").is_none());
    assert_eq!(store.get("a").unwrap().name(), "a");

    let status = store.status();
    assert_eq!(status.generation, 3);
    assert_eq!(status.files.len(), 3);
    let bc = status.file(&root.join("team/sub/bc.mcppol")).unwrap();
    assert_eq!(bc.policies, ["b", "c"]);
    assert_eq!(bc.digest.as_deref(), Some(digest(two).as_str()));
    assert!(bc.loaded_at.is_some() && bc.last_error.is_none() && !bc.removed);
    let c = status.policy("c").unwrap();
    assert_eq!(
        c.file.as_deref(),
        Some(root.join("team/sub/bc.mcppol").as_path())
    );
    assert_eq!(c.digest, digest(two));
    let json = status.to_json();
    assert_eq!(json["generation"], 3);
    assert_eq!(json["policies"][0]["name"], "a");
}

#[test]
fn a_file_invalid_from_the_start_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.mcppol"), version(1)).unwrap();
    let bad = dir.path().join("bad.mcppol");
    std::fs::write(&bad, "policy q {\n  defualt deny\n}\n").unwrap();

    let err = Store::open([dir.path()], LoadOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StoreError::Load(_)), "{text}");
    // The rendered diagnostic: file, line and column, the bad entry, help.
    assert!(text.contains("bad.mcppol:2:3"), "{text}");
    assert!(text.contains("defualt"), "{text}");
    assert!(
        text.contains("default"),
        "did-you-mean help missing: {text}"
    );
    assert!(!text.contains("good.mcppol"), "{text}");
    assert_eq!(
        err.diagnostics()[0].code,
        "mcppol::compile::unknown_setting"
    );
}

#[test]
fn startup_refuses_missing_empty_and_clashing_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Store::open([dir.path().join("nope.mcppol")], LoadOptions::default());
    assert!(missing.unwrap_err().to_string().contains("does not exist"));

    let empty = dir.path().join("empty.mcppol");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let err = Store::open([&empty], LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("defines no policy"), "{err}");

    let clash = dir.path().join("clash");
    std::fs::create_dir(&clash).unwrap();
    std::fs::write(clash.join("one.mcppol"), version(1)).unwrap();
    std::fs::write(clash.join("two.mcppol"), version(2)).unwrap();
    let err = Store::open([&clash], LoadOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("policy `p` is already loaded from") && text.contains("one.mcppol"),
        "{text}"
    );
    assert!(text.contains("two.mcppol"), "{text}");
}

/// Readers decide in a tight loop while a writer rewrites the file hundreds
/// of times, valid and invalid versions in turn, by plain writes (which
/// readers of the file can catch half done) and by renames. Every decision
/// must come from one whole valid version, and the last one must win.
fn stress(watch: Watch, writes: u32) {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_one(dir.path(), &version(0));
    let store = Arc::new(store);
    store.watch(watch).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let decided = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (store, stop, failures, decided) = (
                Arc::clone(&store),
                Arc::clone(&stop),
                Arc::clone(&failures),
                Arc::clone(&decided),
            );
            thread::spawn(move || {
                let mut newest = 0u32;
                let mut count = 0u64;
                let fail = |m: String| failures.lock().unwrap().push(m);
                while !stop.load(Ordering::Relaxed) {
                    // One decision through the store...
                    let d = store.decide("p", &Request::tool("s", "call"));
                    let k = d
                        .rule_id
                        .as_deref()
                        .and_then(|id| id.strip_prefix("v_"))
                        .and_then(|k| k.parse::<u32>().ok());
                    match (d.decision, k) {
                        (Verdict::Allow, Some(k)) if k % 2 == 0 => {
                            if k < newest {
                                fail(format!("went back from version {newest} to {k}"));
                            }
                            newest = newest.max(k);
                        }
                        _ => fail(format!("not from a valid version: {d:?}")),
                    }
                    // ...and two from one snapshot: the same version answers both.
                    let Some(policy) = store.get("p") else {
                        fail("policy p not loaded".into());
                        continue;
                    };
                    let allow = policy.decide(&Request::tool("s", "call"));
                    let deny = policy.decide(&Request::tool("s", "blocked"));
                    let a = allow.rule_id.as_deref().and_then(|i| i.strip_prefix("v_"));
                    let g = deny
                        .rule_id
                        .as_deref()
                        .and_then(|i| i.strip_prefix("gate_"));
                    if a.is_none() || a != g || deny.decision != Verdict::Deny {
                        fail(format!("a mix of versions: {allow:?} and {deny:?}"));
                    }
                    count += 2;
                }
                decided.fetch_add(count, Ordering::Relaxed);
            })
        })
        .collect();

    // A second writer: reloads at random points of the rewrites, racing the
    // watcher (reloads must serialize, and see half-written files).
    let reloader = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        thread::spawn(move || {
            let mut seen = mcppol::Reloaded::default();
            while !stop.load(Ordering::Relaxed) {
                let r = store.reload();
                seen.loaded += r.loaded;
                seen.failed += r.failed;
                thread::sleep(Duration::from_millis(1));
            }
            seen
        })
    };

    let mut refused = 0;
    for i in 1..=writes {
        let text = if i % 2 == 0 {
            version(i)
        } else {
            invalid(i, i / 2)
        };
        if i % 7 == 0 {
            rename_over(&path, &text);
        } else {
            std::fs::write(&path, &text).unwrap();
        }
        if i % 25 == 0 {
            // Deterministically offer the store a bad text now and then.
            refused += store.reload().failed;
        }
        if i % 3 == 0 {
            thread::sleep(Duration::from_millis(2));
        }
    }
    // A version not written before, so that it must be read and loaded.
    let last = (writes / 2 + 1) * 2;
    std::fs::write(&path, version(last)).unwrap();
    wait_for_version(&store, last);
    // The file's newest text loaded: no error stands.
    wait_until("status caught up", || {
        store.status().file(&path).unwrap().digest == Some(digest(&version(last)))
    });

    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().unwrap();
    }
    let raced = reloader.join().unwrap();
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} bad decisions, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(decided.load(Ordering::Relaxed) > 0);
    let status = store.status();
    eprintln!(
        "{watch:?}: {} writes, {} decisions, {} versions swapped in; \
         racing reloads: {} loaded, {} refused",
        writes + 1,
        decided.load(Ordering::Relaxed),
        status.generation,
        raced.loaded,
        raced.failed,
    );
    assert!(refused > 0, "no bad version was ever offered to the store");
    let file = status.file(&path).unwrap();
    assert!(file.last_error.is_none(), "{:?}", file.last_error);
    assert!(status.generation >= 2);
}

#[test]
fn stress_with_file_events() {
    stress(modes()[0], 400);
}

#[test]
fn stress_with_polling() {
    stress(modes()[1], 200);
}

#[test]
fn a_deleted_file_keeps_its_policy_until_a_new_one_loads() {
    for watch in modes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, store) = open_one(dir.path(), &version(1));
        store.watch(watch).unwrap();

        std::fs::remove_file(&path).unwrap();
        wait_until("removal noticed", || {
            store.status().file(&path).unwrap().removed
        });
        assert_eq!(answering_version(&store), Some(1), "{watch:?}");
        assert_eq!(store.status().policy("p").unwrap().generation, 1);

        std::fs::write(&path, version(2)).unwrap();
        wait_for_version(&store, 2);
        let status = store.status();
        let file = status.file(&path).unwrap();
        assert!(!file.removed && file.last_error.is_none());
        assert_eq!(file.generation, Some(2));
    }
}

#[test]
fn saves_by_rename_are_picked_up() {
    for watch in modes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, store) = open_one(dir.path(), &version(1));
        store.watch(watch).unwrap();
        for k in 2..6 {
            rename_over(&path, &version(k));
            wait_for_version(&store, k);
        }
        // A rename that brings a bad text keeps the good one.
        rename_over(&path, &invalid(9, 2));
        wait_until("bad rename noticed", || {
            store.status().file(&path).unwrap().last_error.is_some()
        });
        assert_eq!(answering_version(&store), Some(5), "{watch:?}");
    }
}

#[test]
fn a_truncated_write_keeps_the_last_good_policy_then_the_whole_one_loads() {
    for watch in modes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, store) = open_one(dir.path(), &version(1));
        store.watch(watch).unwrap();

        let whole = version(2);
        let half = &whole[..whole.len() / 2];
        std::fs::write(&path, half).unwrap();
        wait_until("truncated text noticed", || {
            let status = store.status();
            let error = status.file(&path).unwrap().last_error.clone();
            error.is_some_and(|e| e.digest == Some(digest(half)))
        });
        assert_eq!(answering_version(&store), Some(1), "{watch:?}");
        let status = store.status();
        let error = status.policy("p").unwrap().last_error.clone().unwrap();
        assert!(error.rendered.contains("p.mcppol"), "{}", error.rendered);

        // The rest of the write arrives.
        std::fs::write(&path, &whole).unwrap();
        wait_for_version(&store, 2);
        let status = store.status();
        assert!(status.file(&path).unwrap().last_error.is_none());
        assert_eq!(status.policy("p").unwrap().digest, digest(&whole));
    }
}

#[test]
fn an_empty_file_is_a_write_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_one(dir.path(), &version(1));
    std::fs::write(&path, "").unwrap();
    let reloaded = store.reload();
    assert_eq!(reloaded.failed, 1);
    assert_eq!(answering_version(&store), Some(1));
    let status = store.status();
    let error = status.file(&path).unwrap().last_error.clone().unwrap();
    assert!(
        error.rendered.contains("defines no policy"),
        "{}",
        error.rendered
    );
    // Reading the same bad text again is not a new failure.
    assert_eq!(store.reload(), Default::default());
}

#[test]
fn folders_pick_up_new_files_and_refuse_clashing_names() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.mcppol");
    std::fs::write(&a, version(1)).unwrap();
    let store = Store::open([dir.path()], LoadOptions::default()).unwrap();
    store
        .watch(Watch::Events {
            debounce: Duration::from_millis(20),
        })
        .unwrap();

    // A new file with a new policy loads.
    std::fs::create_dir(dir.path().join("more")).unwrap();
    std::fs::write(dir.path().join("more/q.mcppol"), "policy q { deny \"*\" }").unwrap();
    wait_until("new file loaded", || store.get("q").is_some());

    // A new file defining `p` while a.mcppol still does: refused.
    let b = dir.path().join("b.mcppol");
    std::fs::write(&b, version(2)).unwrap();
    wait_until("clash reported", || {
        store
            .status()
            .file(&b)
            .is_some_and(|f| f.last_error.is_some())
    });
    let status = store.status();
    let error = status.file(&b).unwrap().last_error.clone().unwrap();
    assert!(
        error.rendered.contains("already loaded from"),
        "{}",
        error.rendered
    );
    assert_eq!(answering_version(&store), Some(1));

    // Moving the policy to another file (a.mcppol goes, c.mcppol comes):
    // the removed file's policy gives way to the new one.
    std::fs::remove_file(&b).unwrap();
    let c = dir.path().join("c.mcppol");
    std::fs::rename(&a, &c).unwrap();
    wait_for_version(&store, 1);
    wait_until("moved policy owned by c.mcppol", || {
        store.status().policy("p").unwrap().file.as_deref() == Some(c.as_path())
    });
    std::fs::write(&c, version(4)).unwrap();
    wait_for_version(&store, 4);
}

#[test]
fn a_watched_store_is_quiet_when_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_one(dir.path(), &version(1));
    store
        .watch(Watch::Events {
            debounce: Duration::from_millis(20),
        })
        .unwrap();
    std::fs::write(&path, version(2)).unwrap();
    wait_for_version(&store, 2);
    // The refresh that loaded version 2 opened and read the file: those
    // events are in the watcher's queue now. A barrier behind them: a new
    // file in the folder, a change the watcher must act on. Events are
    // handled in order, so once the refresh it causes has run, every event
    // of the earlier read has been looked at.
    let before = store.status();
    std::fs::write(dir.path().join("notes.txt"), "barrier").unwrap();
    wait_until("the barrier's refresh", || {
        store.status().refreshes > before.refreshes
    });
    // Reading is not a change: those events were counted and let go (were
    // they taken for changes, none would be ignored, and every refresh
    // would start another).
    let after = store.status();
    assert!(
        after.ignored_events > before.ignored_events,
        "the reads were not seen as reads: {} ignored",
        after.ignored_events
    );
    assert_eq!(after.generation, 2);
}

#[test]
fn without_file_events_the_store_falls_back_to_polling() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let path = sub.join("p.mcppol");
    std::fs::write(&path, version(1)).unwrap();
    let store = Store::open([&path], LoadOptions::default()).unwrap();
    // The folder to watch is gone: events cannot be set up.
    std::fs::remove_dir_all(&sub).unwrap();
    store.watch(Watch::events()).unwrap();
    assert_eq!(answering_version(&store), Some(1));
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(&path, version(2)).unwrap();
    wait_for_version(&store, 2);
}

#[test]
fn a_policy_in_use_is_not_changed_by_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_one(dir.path(), &version(1));
    let held = store.get("p").unwrap();
    std::fs::write(&path, version(2)).unwrap();
    assert_eq!(store.reload().loaded, 1);
    assert_eq!(answering_version(&store), Some(2));
    let old = held.decide(&Request::tool("s", "call"));
    assert_eq!(old.rule_id.as_deref(), Some("v_1"));
}

#[test]
fn updates_by_name_and_by_file_are_checked_and_swapped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store) = open_one(dir.path(), &version(1));

    // By file: a new version in memory.
    let generation = store.update(path.to_str().unwrap(), &version(2)).unwrap();
    assert_eq!(generation, 2);
    assert_eq!(answering_version(&store), Some(2));
    // The unchanged file on disk does not undo it...
    assert_eq!(store.reload(), Default::default());
    assert_eq!(answering_version(&store), Some(2));

    // ...and a bad one is refused, keeping version 2, with the error in the status.
    let err = store.update_file(&path, &invalid(3, 2)).unwrap_err();
    assert!(err.to_string().contains("defualt"), "{err}");
    assert_eq!(answering_version(&store), Some(2));
    assert!(store.status().file(&path).unwrap().last_error.is_some());

    // By name: the text must define that policy, and only it.
    let err = store
        .update("p", "policy p { }\npolicy other { }")
        .unwrap_err();
    assert!(err.to_string().contains("another policy"), "{err}");
    let err = store.update("p", "").unwrap_err();
    assert!(
        err.to_string().contains("does not define policy `p`"),
        "{err}"
    );
    assert!(store.status().policy("p").unwrap().last_error.is_some());
    assert_eq!(store.update("p", &version(4)).unwrap(), 3);
    assert_eq!(answering_version(&store), Some(4));
    let status = store.status();
    let p = status.policy("p").unwrap();
    assert!(p.file.is_none() && p.last_error.is_none());
    assert_eq!(p.digest, digest(&version(4)));

    // A new name is added; the file's own next version takes `p` back.
    store
        .update("extra", "policy extra { deny \"*\" }")
        .unwrap();
    assert_eq!(store.names(), ["extra", "p"]);
    std::fs::write(&path, version(6)).unwrap();
    assert_eq!(store.reload().loaded, 1);
    assert_eq!(answering_version(&store), Some(6));
    assert_eq!(
        store.status().policy("p").unwrap().file.as_deref(),
        Some(path.as_path())
    );

    // Updating a file the store does not hold is an error.
    let other = dir.path().join("other.mcppol");
    let err = store.update_file(&other, &version(8)).unwrap_err();
    assert!(matches!(err, StoreError::UnknownFile(_)));
}

#[test]
fn host_predicates_are_checked_on_reload_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, "policy p { allow \"s/call\" when host.ok }").unwrap();
    let mut host = mcppol::HostPredicates::new();
    host.register("ok", |_| Ok(true));
    let store = Store::open([&path], LoadOptions { host: Some(host) }).unwrap();
    assert!(store.decide("p", &Request::tool("s", "call")).is_allow());

    std::fs::write(&path, "policy p { allow \"s/call\" when host.okay }").unwrap();
    assert_eq!(store.reload().failed, 1);
    assert!(store.decide("p", &Request::tool("s", "call")).is_allow());
}

#[test]
fn check_watch_checks_again_on_every_save() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, version(1)).unwrap();
    let mut child = Command::new(crate::common::MCPPOL)
        .args(["check", "--watch"])
        .arg(&path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if lines_tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut expect = |needle: &str| {
        let start = Instant::now();
        while !seen.contains(needle) {
            let left = PATIENCE.saturating_sub(start.elapsed());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(_) => panic!("no `{needle}` in:\n{seen}"),
            }
        }
        std::mem::take(&mut seen)
    };
    expect("checked 1 file: 0 errors");
    std::fs::write(&path, invalid(2, 2)).unwrap();
    let report = expect("checked 1 file: 1 error");
    assert!(report.contains("defualt"), "{report}");
    rename_over(&path, &version(3));
    let report = expect("checked 1 file: 0 errors");
    // One save, one check: the header and the report came once. (That the
    // check's own reads start no further check is the shared debouncer's
    // rule; `a_watched_store_is_quiet_when_nothing_changes` checks it with
    // the ignored-event counter and a barrier instead of waiting.)
    assert_eq!(report.matches("checking again").count(), 1, "{report}");
    child.kill().unwrap();
    child.wait().unwrap();
}
