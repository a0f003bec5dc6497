//! The governed call's own cost, over the in-memory transport.
//!
//! `cargo bench --bench pipeline`. Each benchmark makes one tool call per
//! iteration inside one tokio current-thread runtime:
//!
//! - `transport_only`: the in-memory transport's `call_tool` alone (the
//!   floor: the scripted server, its JSON, the result);
//! - `decide_only`: the policy's decision on the same request, alone;
//! - `no_hooks`: the pipeline with a policy and nothing else;
//! - `ten_hooks`: five before- and five after-hooks that continue;
//! - `validation`: input and output schemas checked.
//!
//! The pipeline's own cost is `no_hooks` minus `transport_only` and
//! `decide_only`.

#![allow(clippy::expect_used)] // a benchmark stops on a broken fixture

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use mcppol::mcp::{FakeServer, MemoryTransport, Transport};
use mcppol::pipeline::{
    After, Before, CallOptions, Hook, Matcher, Pipeline, PolicySource, Validation,
};
use mcppol::PolicySet;
use serde_json::json;

const POLICY: &str = r#"policy bench {
  default deny
  deny "fs/*" when args.path escapes "/srv/sandbox"
  deny "*/delete_*"
  ask "fs/write_*"
  allow "fs/read_file" when args.path inside "/srv/sandbox"
}"#;

fn server() -> FakeServer {
    FakeServer::new().tool(
        json!({"name": "read_file", "description": "Read a file.",
               "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
               "outputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
               "annotations": {"readOnlyHint": true}}),
        |_| {
            Ok(json!({"content": [{"type": "text", "text": "hello"}],
                      "structuredContent": {"size": 5}, "isError": false}))
        },
    )
}

fn pipeline(hooks: Vec<Hook>, validation: Validation) -> (Pipeline, Arc<MemoryTransport>) {
    let set = PolicySet::from_text("bench.mcppol", POLICY).expect("policy loads");
    let policy = set.get("bench").expect("policy").clone();
    let transport = Arc::new(MemoryTransport::new(server()));
    let p = Pipeline::builder("fs", transport.clone(), PolicySource::Fixed(policy))
        .hooks(hooks)
        .validation(validation)
        .build()
        .expect("pipeline");
    (p, transport)
}

fn ten_hooks() -> Vec<Hook> {
    let mut hooks = Vec::new();
    for i in 0..5 {
        hooks.push(Hook::before(
            &format!("b{i}"),
            Matcher::pattern("fs/*"),
            |_, _| async { Ok(Before::Continue) },
        ));
        hooks.push(Hook::after(
            &format!("a{i}"),
            Matcher::All,
            |_, _, _| async { Ok(After::Continue) },
        ));
    }
    hooks
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args = json!({"path": "/srv/sandbox/notes.txt"});
    let opts = CallOptions::default();
    let mut group = c.benchmark_group("pipeline");

    let (_, transport) = pipeline(Vec::new(), Validation::default());
    group.bench_function("transport_only", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = transport.call_tool("read_file", args.clone(), None).await;
                    std::hint::black_box(r.expect("call"));
                }
                start.elapsed()
            })
        })
    });

    let set = PolicySet::from_text("bench.mcppol", POLICY).expect("policy loads");
    let policy = set.get("bench").expect("policy").clone();
    let annotations = json!({"readOnlyHint": true});
    group.bench_function("decide_only", |b| {
        b.iter(|| {
            let request = mcppol::Request::tool("fs", "read_file")
                .with_args(&args)
                .with_annotations(&annotations)
                .without_approver();
            std::hint::black_box(policy.decide(std::hint::black_box(&request)))
        })
    });

    let cases: [(&str, Vec<Hook>, Validation); 3] = [
        ("no_hooks", Vec::new(), Validation::default()),
        ("ten_hooks", ten_hooks(), Validation::default()),
        ("validation", Vec::new(), Validation::on()),
    ];
    for (name, hooks, validation) in cases {
        let (p, _) = pipeline(hooks, validation);
        rt.block_on(p.refresh_tools()).expect("listing");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let r = p.call_tool("read_file", args.clone(), &opts).await;
                        std::hint::black_box(r.expect("allowed"));
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
