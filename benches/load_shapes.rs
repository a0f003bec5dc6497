//! Load and check time by pattern kind at 10,000, 40,000 and 80,000 rules:
//! each kind must stay near linear in the file's size (issue 8: 80,000
//! server globs took 27-48 s to load when each was filed by a linear
//! search).
//!
//! `cargo bench --bench load_shapes -- --warm-up-time 1 --measurement-time 3`.
//! `MCPPOL_BENCH_SIZES=10000,40000` picks the rule counts. Figures:
//! docs/performance.md.

#![allow(clippy::expect_used)] // a benchmark stops on a broken fixture

use std::alloc::System;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcppol::{check_text, LintOptions};
use mcppol::{LoadOptions, PolicySet};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The `i`-th rule of a generated file.
type Rule = fn(usize) -> String;

/// One kind of target, as the `i`-th rule writes it.
const KINDS: &[(&str, Rule)] = &[
    ("literal", |i| format!(r#"allow "s{i}/t{i}""#)),
    ("prefix", |i| format!(r#"deny "s/t{i}_*""#)),
    ("suffix", |i| format!(r#"deny "s/*_{i}t""#)),
    ("server_glob", |i| format!(r#"allow "s{i}*/t""#)),
    // 1,000 distinct regexes (each compiled once), on 80,000 servers.
    ("regex", |i| format!(r#"deny "s{i}" ~ /^t{}$/"#, i % 1000)),
];

#[path = "common/sizes.rs"]
mod sizes;

fn sizes() -> Vec<usize> {
    sizes::from_env(&[10_000, 40_000, 80_000])
}

fn text(rule: Rule, n: usize) -> String {
    let mut out = String::from("policy p {\n");
    for i in 0..n {
        out.push_str("  ");
        out.push_str(&rule(i));
        out.push('\n');
    }
    out.push_str("}\n");
    out
}

fn shapes(c: &mut Criterion) {
    for (kind, rule) in KINDS {
        let mut group = c.benchmark_group(format!("load_shapes/{kind}"));
        group.sample_size(10);
        for n in sizes() {
            let text = text(*rule, n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new("load", n), &text, |b, text| {
                b.iter(|| PolicySet::from_text("shapes.mcppol", black_box(text)).expect("loads"))
            });
            group.bench_with_input(BenchmarkId::new("check", n), &text, |b, text| {
                b.iter(|| {
                    check_text(
                        "shapes.mcppol",
                        black_box(text),
                        &LoadOptions::default(),
                        &LintOptions::default(),
                    )
                })
            });
        }
        group.finish();
    }
}

/// The issue's regex input: 3,000 lines of one Unicode-wide regex (3.4 GB
/// and 21 s to load when each line compiled its own copy). Prints the
/// bytes loading allocates, then times the load.
fn runaway_regex(c: &mut Criterion) {
    let text = text(|i| format!(r#"deny "s{i}" ~ /\w{{20}}/"#), 3000);
    let region = Region::new(GLOBAL);
    let set = PolicySet::from_text("runaway.mcppol", &text).expect("loads");
    let stats = region.change();
    eprintln!(
        "3,000 x /\\w{{20}}/: {} bytes allocated while loading, {} kept",
        stats.bytes_allocated,
        stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
    );
    drop(set);
    let mut group = c.benchmark_group("load_shapes/runaway");
    group.sample_size(10);
    group.bench_function("regex_3000_identical", |b| {
        b.iter(|| PolicySet::from_text("runaway.mcppol", black_box(&text)).expect("loads"))
    });
    group.finish();
}

criterion_group!(benches, shapes, runaway_regex);
criterion_main!(benches);
