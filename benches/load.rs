//! Compile (load) time per rule count, and the memory of a compiled policy.
//!
//! `cargo bench --bench load`. Before timing, prints per rule count the
//! bytes allocated while parsing and compiling, the bytes the compiled
//! `PolicySet` keeps, and the allocations made while deciding the request
//! mix (the common path should make none). A counting allocator
//! (`stats_alloc`) wraps the system allocator for this whole binary.
//!
//! With `--features fuzzing`, the group `compile/N` times the compile step
//! alone, on text parsed beforehand (`mcppol::fuzzing::{parse, compile}`,
//! hidden entry points that exist only with that non-default feature, so
//! the public API stays as it is): `cargo bench --features fuzzing --bench
//! load`.

#![allow(clippy::expect_used)] // a benchmark stops on a broken fixture

use mcppol::test_util::gen;

use std::alloc::System;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcppol::PolicySet;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[path = "common/sizes.rs"]
mod sizes;

fn sizes() -> Vec<usize> {
    sizes::from_env(&gen::SIZES)
}

fn memory_report(works: &[gen::Workload]) {
    eprintln!(
        "{:>7} {:>10} {:>14} {:>14} {:>16}",
        "rules", "text", "allocated", "retained", "allocs/decision"
    );
    for work in works {
        let region = Region::new(GLOBAL);
        let set = PolicySet::from_text("generated.mcppol", &work.text).expect("policy loads");
        let during = region.change();
        let policy = set.get(&work.spec.name).expect("policy");
        let taints: Vec<Vec<&str>> = work.requests.iter().map(|(_, r)| r.taint_refs()).collect();
        let requests: Vec<mcppol::Request<'_>> = work
            .requests
            .iter()
            .zip(&taints)
            .map(|((_, r), t)| gen::mcppol_request(r, t))
            .collect();
        // Once to warm up (a regex makes its matching cache on first use),
        // then counted.
        for r in &requests {
            black_box(policy.decide(r));
        }
        let deciding = Region::new(GLOBAL);
        for r in &requests {
            black_box(policy.decide(r));
        }
        let decided = deciding.change();
        eprintln!(
            "{:>7} {:>10} {:>14} {:>14} {:>16.2}",
            work.size,
            work.text.len(),
            during.bytes_allocated,
            during.bytes_allocated as i64 - during.bytes_deallocated as i64,
            (decided.allocations + decided.reallocations) as f64 / requests.len() as f64,
        );
        drop(set);
    }
}

fn load(c: &mut Criterion) {
    let works: Vec<gen::Workload> = sizes()
        .into_iter()
        .map(|n| gen::Workload::new(n).expect("workload"))
        .collect();
    memory_report(&works);
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    for work in &works {
        group.bench_with_input(
            BenchmarkId::from_parameter(work.size),
            &work.text,
            |b, text| {
                b.iter(|| PolicySet::from_text("generated.mcppol", black_box(text)).expect("loads"))
            },
        );
    }
    group.finish();
    compile(c, &works);
}

/// The compile step alone (text already parsed): syntax tree to policy.
#[cfg(feature = "fuzzing")]
fn compile(c: &mut Criterion, works: &[gen::Workload]) {
    let options = mcppol::LoadOptions::default();
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for work in works {
        let parsed = mcppol::fuzzing::parse("generated.mcppol", &work.text).expect("parses");
        group.bench_with_input(
            BenchmarkId::from_parameter(work.size),
            &parsed,
            |b, parsed| {
                b.iter(|| mcppol::fuzzing::compile(black_box(parsed), &options).expect("compiles"))
            },
        );
    }
    group.finish();
}

#[cfg(not(feature = "fuzzing"))]
fn compile(_: &mut Criterion, _: &[gen::Workload]) {
    eprintln!("compile/N (the compile step alone) needs `--features fuzzing`");
}

criterion_group!(benches, load);
criterion_main!(benches);
