//! Decision latency per rule count and per request kind.
//!
//! `cargo bench --bench decide` (sizes: `MCPPOL_BENCH_SIZES=10,100,1000,10000`,
//! the default). Each benchmark decides one request per iteration, cycling
//! through 16 requests of its kind (deny, ask, allow, default) or through
//! the whole mix of 64, so the figure is the time of one decision.

#![allow(clippy::expect_used)] // a benchmark stops on a broken fixture

use mcppol::test_util::gen;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcppol::{PolicySet, Request};

#[path = "common/sizes.rs"]
mod sizes;

fn sizes() -> Vec<usize> {
    sizes::from_env(&gen::SIZES)
}

fn cycle(b: &mut criterion::Bencher<'_>, policy: &mcppol::Policy, requests: &[Request<'_>]) {
    let mut i = 0;
    b.iter(|| {
        i = (i + 1) % requests.len();
        black_box(policy.decide(black_box(&requests[i])))
    });
}

fn decide(c: &mut Criterion) {
    for size in sizes() {
        let work = gen::Workload::new(size).expect("workload");
        let set = PolicySet::from_text("generated.mcppol", &work.text).expect("policy loads");
        let policy = set.get(&work.spec.name).expect("policy");
        let taints: Vec<Vec<&str>> = work.requests.iter().map(|(_, r)| r.taint_refs()).collect();
        let requests: Vec<(usize, Request<'_>)> = work
            .requests
            .iter()
            .zip(&taints)
            .map(|((kind, r), taint)| (*kind, gen::mcppol_request(r, taint)))
            .collect();
        let mut group = c.benchmark_group("decide");
        for (kind, name) in gen::KINDS.iter().enumerate() {
            let of_kind: Vec<Request<'_>> = requests
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, r)| *r)
                .collect();
            group.bench_with_input(BenchmarkId::new(*name, size), &of_kind, |b, reqs| {
                cycle(b, policy, reqs)
            });
        }
        let all: Vec<Request<'_>> = requests.iter().map(|(_, r)| *r).collect();
        group.bench_with_input(BenchmarkId::new("mix", size), &all, |b, reqs| {
            cycle(b, policy, reqs)
        });
        group.finish();
    }
}

criterion_group!(benches, decide);
criterion_main!(benches);
