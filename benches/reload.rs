//! The runtime store: reload latency and the cost of a decision while
//! reloads happen.
//!
//! `cargo bench --bench reload`. The policy is a realistic one (40 rules of
//! every kind, conditions included); each version differs in one rule id,
//! so a decision says which version answered.
//!
//! - `reload/update`: `Store::update` by name: parse, compile, check, swap.
//! - `reload/file_reload`: write the file, then `Store::reload()`.
//! - `reload/events_*`, `reload/poll_*`: write the file and wait until the
//!   new version decides, with the watcher doing the work (debounce or
//!   poll interval included: that is the latency a host sees).
//! - `decide/*`: one decision through the store, idle and while another
//!   thread swaps in a new version as fast as it can; and through a held
//!   `Arc<Policy>` for comparison.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a benchmark stops on a broken fixture

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use mcppol::{LoadOptions, Request, Store, Watch};

/// Version `k`: 40 rules, the probe rule's id carries `k`.
fn version(k: u64) -> String {
    let mut text = String::from("policy p {\n  default ask\n  trusted \"fs\"\n");
    for i in 0..10 {
        text.push_str(&format!("  deny d{i}: \"srv{i}/delete_*\"\n"));
        text.push_str(&format!(
            "  deny p{i}: \"fs/write_{i}\" when args.path escapes \"/srv/sandbox\"\n"
        ));
        text.push_str(&format!("  ask a{i}: \"srv{i}/create_*\" when tainted\n"));
        text.push_str(&format!(
            "  allow r{i}: \"srv{i}/get_thing\" when args.id matches /^T-[0-9]+$/\n"
        ));
    }
    text.push_str(&format!("  allow v_{k}: \"bench/probe\"\n}}\n"));
    text
}

fn answering(store: &Store) -> Option<u64> {
    let d = store.decide("p", &Request::tool("bench", "probe"));
    d.rule_id.as_deref()?.strip_prefix("v_")?.parse().ok()
}

/// Writes version `k` and waits until it decides.
fn write_and_wait(store: &Store, path: &Path, k: u64) -> Duration {
    let text = version(k);
    let start = Instant::now();
    std::fs::write(path, text).unwrap();
    while answering(store) != Some(k) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "version {k} never loaded"
        );
        thread::yield_now();
    }
    start.elapsed()
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.mcppol");
    std::fs::write(&path, version(0)).unwrap();
    let store = Store::open([&path], LoadOptions::default()).unwrap();
    (dir, path, store)
}

fn reload(c: &mut Criterion) {
    let mut group = c.benchmark_group("reload");

    let store = Store::empty(LoadOptions::default());
    let texts: Vec<String> = (0..64).map(version).collect();
    let mut i = 0;
    group.bench_function("update", |b| {
        b.iter(|| {
            i += 1;
            store.update("p", &texts[i % texts.len()]).unwrap()
        })
    });

    let (_dir, path, store) = setup();
    let mut k = 0;
    group.bench_function("file_reload", |b| {
        b.iter(|| {
            k += 1;
            std::fs::write(&path, &texts[k % texts.len()]).unwrap();
            store.reload()
        })
    });

    group.sample_size(10);
    let watched = [
        (
            "events_10ms",
            Watch::Events {
                debounce: Duration::from_millis(10),
            },
        ),
        ("events_50ms_default", Watch::events()),
        (
            "poll_100ms",
            Watch::Poll {
                interval: Duration::from_millis(100),
            },
        ),
    ];
    for (name, watch) in watched {
        let (_dir, path, store) = setup();
        store.watch(watch).unwrap();
        let mut k = 0;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    k += 1;
                    total += write_and_wait(&store, &path, k);
                }
                total
            })
        });
    }
    group.finish();
}

fn decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide");
    let (_dir, _path, store) = setup();
    let args = serde_json::json!({ "id": "T-42" });
    let request = Request::tool("srv7", "get_thing").with_args(&args);

    let held = store.get("p").unwrap();
    group.bench_function("held_arc", |b| b.iter(|| held.decide(black_box(&request))));
    group.bench_function("store_idle", |b| {
        b.iter(|| store.decide(black_box("p"), black_box(&request)))
    });

    // Another thread swaps in new versions without pause.
    let store = Arc::new(store);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, stop, swaps) = (Arc::clone(&store), Arc::clone(&stop), Arc::clone(&swaps));
        thread::spawn(move || {
            let texts: Vec<String> = (0..64).map(version).collect();
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                store.update("p", &texts[k % texts.len()]).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let start = Instant::now();
    group.bench_function("store_during_reloads", |b| {
        b.iter(|| store.decide(black_box("p"), black_box(&request)))
    });
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "decide/store_during_reloads: {} swaps in {secs:.1} s ({:.0} a second)",
        swaps.load(Ordering::Relaxed),
        swaps.load(Ordering::Relaxed) as f64 / secs
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = reload, decide
}
criterion_main!(benches);
