//! What a decision pays to carry its rule id and policy name
//! (docs/performance.md, "The optimizations kept, and why").
//!
//! `cargo bench --bench rule_ids`. Each iteration clones two strings out of
//! a compiled rule and a policy, as a decision does, and drops them, as
//! its caller does: two `Arc<str>` (two atomic increments, two atomic
//! decrements), two `SmolStr` of up to 23 bytes (copied inline), two
//! `SmolStr` past 23 bytes (behind an `Arc` again), and, for the floor,
//! two borrowed `&str` copied.

use std::hint::black_box;
use std::sync::Arc;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use mcppol::SmolStr;

const SHORT_ID: &str = "deny:12";
const SHORT_POLICY: &str = "main";
const LONG_ID: &str = "the_deny_rule_with_a_long_identifier";
const LONG_POLICY: &str = "a_policy_name_longer_than_twenty_three_bytes";

fn pair<T: Clone>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, id: T, policy: T) {
    g.bench_function(name, |b| {
        b.iter(|| {
            let made = (black_box(&id).clone(), black_box(&policy).clone());
            drop(black_box(made));
        })
    });
}

fn rule_ids(c: &mut Criterion) {
    let mut g = c.benchmark_group("rule_ids");
    pair(
        &mut g,
        "arc_str",
        Arc::<str>::from(SHORT_ID),
        Arc::<str>::from(SHORT_POLICY),
    );
    pair(
        &mut g,
        "smol_str_inline",
        SmolStr::new(SHORT_ID),
        SmolStr::new(SHORT_POLICY),
    );
    pair(
        &mut g,
        "smol_str_shared",
        SmolStr::new(LONG_ID),
        SmolStr::new(LONG_POLICY),
    );
    pair(&mut g, "borrowed", SHORT_ID, SHORT_POLICY);
    g.finish();
}

criterion_group!(benches, rule_ids);
criterion_main!(benches);
