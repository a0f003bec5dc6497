//! mcppol side by side with Cedar (`cedar-policy`) and Rego (`regorus`) on
//! the same generated policies and requests.
//!
//! ```text
//! CARGO_TARGET_DIR=target/compare \
//!   cargo run --release -p mcppol-compare -- --sizes 10,100,1000,10000
//! ```
//!
//! Per rule count: generates the policy (`mcppol::test_util::gen`, src/test_util/gen/), renders
//! it to Cedar and Rego in two set-ups, loads them all (timing it and
//! counting the bytes it allocates and keeps), checks that every engine
//! gives every request of the mix the same answer (decision and deciding
//! rule), and only then times decision latency, the engines' samples
//! interleaved. See `docs/performance.md`.
//!
//! The two set-ups of Cedar and Rego:
//!
//! - *per server* (as an expert would set them up): the rules split by the
//!   server they can apply to (`partition.rs`), one Cedar policy set and
//!   one regorus engine per server plus a catch-all one for servers no rule
//!   names; a request goes to its server's set through a `HashMap` lookup on
//!   its folded server id, timed with the decision. Cedar policies put a
//!   literal tool in the scope.
//! - *flat*: all the rules in one Cedar policy set and one Rego module,
//!   every policy with an open scope, so both engines evaluate every rule
//!   on every request.

#![deny(unsafe_code)]

use mcppol::test_util::gen;

mod alloc;
mod cedar;
mod input;
mod partition;
mod rego;

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write as _;
use std::time::{Duration, Instant};

use gen::Effect;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// What decided: a rule (list and position) or the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub effect: Option<Effect>,
    pub index: usize,
}

impl Outcome {
    pub const DEFAULT: Outcome = Outcome {
        effect: None,
        index: 0,
    };

    pub fn rule(effect: Effect, index: usize) -> Outcome {
        Outcome {
            effect: Some(effect),
            index,
        }
    }
}

struct Options {
    sizes: Vec<usize>,
    samples: usize,
    sample_time: Duration,
    csv: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        sizes: gen::SIZES.to_vec(),
        samples: 21,
        sample_time: Duration::from_millis(60),
        csv: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                o.sizes = value()?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--sizes: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--samples" => o.samples = value()?.parse().map_err(|e| format!("--samples: {e}"))?,
            "--sample-ms" => {
                o.sample_time = Duration::from_millis(
                    value()?.parse().map_err(|e| format!("--sample-ms: {e}"))?,
                )
            }
            "--csv" => o.csv = Some(value()?),
            "-h" | "--help" => {
                println!(
                    "usage: mcppol-compare [--sizes 10,100,1000,10000] [--samples 21] \
                     [--sample-ms 60] [--csv FILE]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(o)
}

/// Median of the samples.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One engine's timed pass over the whole mix.
type Pass<'a> = Box<dyn FnMut() + 'a>;

/// Times `passes` (engines) interleaved: each sample runs every engine for
/// about `sample_time`; returns per engine the median time of one decision.
fn time_interleaved(passes: &mut [Pass<'_>], per_pass: usize, o: &Options) -> Vec<f64> {
    // Calibrate: passes per sample.
    let reps: Vec<u32> = passes
        .iter_mut()
        .map(|p| {
            p(); // warm up
            let t = Instant::now();
            p();
            let one = t.elapsed().as_secs_f64().max(1e-9);
            ((o.sample_time.as_secs_f64() / one) as u32).max(1)
        })
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); passes.len()];
    for _ in 0..o.samples {
        for (i, p) in passes.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..reps[i] {
                p();
            }
            let ns = t.elapsed().as_secs_f64() * 1e9 / (reps[i] as f64 * per_pass as f64);
            samples[i].push(ns);
        }
    }
    samples.into_iter().map(median).collect()
}

/// Median wall time of `f` over `reps` runs, in milliseconds.
fn time_ms<T>(reps: usize, mut f: impl FnMut() -> T) -> f64 {
    let v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(v)
}

/// Bytes kept by what `f` builds (allocated minus freed while building).
fn retained<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let (built, counts) = alloc::count(f);
    (built, counts.retained)
}

struct Row {
    size: usize,
    mcppol_ns: f64,
    /// Flat set-up: one policy set / module for all rules.
    cedar_ns: f64,
    regorus_ns: f64,
    cedar_e2e_ns: f64,
    regorus_e2e_ns: f64,
    /// Per-server set-up: dispatch + the server's set.
    cedar_ps_ns: f64,
    regorus_ps_ns: f64,
    cedar_ps_e2e_ns: f64,
    regorus_ps_e2e_ns: f64,
    /// Sets in the per-server set-up (named servers + the catch-all), and
    /// the most rules one set holds.
    sets: usize,
    max_set_rules: usize,
    /// Per-server load (all sets) and memory: Cedar, regorus.
    load_ps_ms: [f64; 2],
    memory_ps: [i64; 2],
    kind_ns: [f64; 4],
    allocs_per_decision: f64,
    load_ms: [f64; 3],
    memory: [i64; 3],
}

fn run_size(size: usize, o: &Options) -> Result<Row, String> {
    let work = gen::Workload::new(size)?;
    let spec = &work.spec;
    let cedar_text = cedar::render(spec);
    let rego_text = rego::render(spec);
    let sets = partition::partition(spec);
    let cedar_set_texts: Vec<String> = sets.iter().map(cedar::render_set).collect();
    let rego_set_texts: Vec<String> = sets.iter().map(rego::render_set).collect();
    if std::env::var_os("MCPPOL_COMPARE_DUMP").is_some() {
        let dir = std::env::temp_dir();
        let per_server = |texts: &[String]| {
            sets.iter()
                .zip(texts)
                .map(|(set, text)| {
                    format!(
                        "# ---- set: {}\n{text}",
                        set.key.as_deref().unwrap_or("(catch-all)")
                    )
                })
                .collect::<String>()
        };
        for (ext, text) in [
            ("mcppol", work.text.clone()),
            ("cedar", cedar_text.clone()),
            ("rego", rego_text.clone()),
            ("per_server.cedar", per_server(&cedar_set_texts)),
            ("per_server.rego", per_server(&rego_set_texts)),
        ] {
            let path = dir.join(format!("compare_{size}.{ext}"));
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
        }
    }

    // Load: time and memory.
    let load_reps = if size >= 10_000 { 5 } else { 11 };
    let (set, mem_mcppol) =
        retained(|| mcppol::PolicySet::from_text("generated.mcppol", &work.text));
    let set = set.map_err(|e| e.render(false))?;
    let policy = set.get(&spec.name).ok_or("policy missing")?;
    let first_input = input::Prep::new(&spec.trusted).input(&work.requests[0].1);
    let load_mcppol = time_ms(load_reps, || {
        mcppol::PolicySet::from_text("generated.mcppol", &work.text).is_ok()
    });
    let (cedar_set, mem_cedar) = retained(|| cedar::Engine::parse(&cedar_text));
    let cedar = cedar::Engine::new(cedar_set?)?;
    let load_cedar = time_ms(load_reps.min(5), || {
        cedar::Engine::parse(&cedar_text).is_ok()
    });
    // regorus analyses the module on the first evaluation: count it in.
    let rego_load = || -> Result<rego::Engine, String> {
        let mut e = rego::Engine::new(&rego_text)?;
        e.decide(regorus::Value::from(first_input.clone()))?;
        Ok(e)
    };
    let (rego_engine, mem_rego) = retained(rego_load);
    let mut rego = rego_engine?;
    let load_rego = time_ms(load_reps.min(3), || rego_load().is_ok());

    // Per server: one Cedar policy set and one regorus engine per set.
    let cedar_ps_parse = || -> Result<Vec<cedar_policy::PolicySet>, String> {
        cedar_set_texts
            .iter()
            .map(|t| cedar::Engine::parse(t))
            .collect()
    };
    let (cedar_ps_sets, mem_cedar_ps) = retained(cedar_ps_parse);
    let cedar_ps = partition::PerServer::new(
        &sets,
        cedar_ps_sets?
            .into_iter()
            .map(cedar::Engine::new)
            .collect::<Result<_, _>>()?,
    )?;
    let load_cedar_ps = time_ms(load_reps.min(5), || cedar_ps_parse().is_ok());
    let rego_ps_load = || -> Result<Vec<rego::Engine>, String> {
        rego_set_texts
            .iter()
            .map(|t| {
                let mut e = rego::Engine::new(t)?;
                e.decide(regorus::Value::from(first_input.clone()))?;
                Ok(e)
            })
            .collect()
    };
    let (rego_ps_engines, mem_rego_ps) = retained(rego_ps_load);
    let mut rego_ps = partition::PerServer::new(&sets, rego_ps_engines?)?;
    let load_rego_ps = time_ms(load_reps.min(3), || rego_ps_load().is_ok());

    // The answers mcppol gives, and every input prepared ahead.
    let ids: HashMap<&str, (Effect, usize)> = spec
        .rules
        .iter()
        .map(|r| (r.id.as_str(), (r.effect, r.index)))
        .collect();
    let prep = input::Prep::new(&spec.trusted);
    let taints: Vec<Vec<&str>> = work.requests.iter().map(|(_, r)| r.taint_refs()).collect();
    let requests: Vec<mcppol::Request<'_>> = work
        .requests
        .iter()
        .zip(&taints)
        .map(|((_, r), t)| gen::mcppol_request(r, t))
        .collect();
    let inputs: Vec<serde_json::Value> = work.requests.iter().map(|(_, r)| prep.input(r)).collect();
    let cedar_requests: Vec<cedar_policy::Request> = work
        .requests
        .iter()
        .zip(&inputs)
        .map(|((_, r), i)| cedar.request(&r.principal, &r.server, &r.tool, i.clone()))
        .collect::<Result<_, _>>()?;
    let rego_inputs: Vec<regorus::Value> = inputs
        .iter()
        .map(|i| regorus::Value::from(i.clone()))
        .collect();
    // Per server: the dispatch key (the folded server id the input carries)
    // and Cedar requests whose resource is the folded tool.
    let server_fs: Vec<String> = work
        .requests
        .iter()
        .map(|(_, r)| gen::fold(&r.server))
        .collect();
    let cedar_scoped = cedar_ps.engines.first().ok_or("no Cedar set")?;
    let cedar_ps_requests: Vec<cedar_policy::Request> = work
        .requests
        .iter()
        .zip(&inputs)
        .map(|((_, r), i)| {
            cedar_scoped.request_scoped(&r.principal, &gen::fold(&r.tool), i.clone())
        })
        .collect::<Result<_, _>>()?;

    // Check before timing: same decision and deciding rule everywhere.
    let mut mismatches = Vec::new();
    for (n, ((kind, spec_req), req)) in work.requests.iter().zip(&requests).enumerate() {
        let d = policy.decide(req);
        let want = match (d.source, d.rule_id.as_deref()) {
            (mcppol::Source::Default, _) => Outcome::DEFAULT,
            (_, Some(id)) => {
                let &(e, i) = ids.get(id).ok_or(format!("unknown rule id {id}"))?;
                Outcome::rule(e, i)
            }
            _ => return Err(format!("unexpected mcppol decision {:?}", d)),
        };
        if d.reason == mcppol::Reason::PredicateFailed {
            return Err(format!("request {n} hit a failing predicate: {spec_req:?}"));
        }
        let verdict = match want.effect {
            Some(Effect::Deny) => mcppol::Verdict::Deny,
            Some(Effect::Allow) => mcppol::Verdict::Allow,
            _ => mcppol::Verdict::Ask,
        };
        if d.decision != verdict || gen::kind_of(&d) != *kind {
            return Err(format!("mcppol decided {d:?} for {spec_req:?}"));
        }
        let got_cedar = cedar.decide(&cedar_requests[n]);
        let errors = cedar.errors(&cedar_requests[n]);
        let got_rego = rego.decide(rego_inputs[n].clone())?;
        let cedar_set = &cedar_ps.engines[cedar_ps.slot(&server_fs[n])];
        let got_cedar_ps = cedar_set.decide(&cedar_ps_requests[n]);
        let errors_ps = cedar_set.errors(&cedar_ps_requests[n]);
        let slot = rego_ps.slot(&server_fs[n]);
        let got_rego_ps = rego_ps.engines[slot].decide(rego_inputs[n].clone())?;
        if got_cedar != want
            || got_rego != want
            || !errors.is_empty()
            || got_cedar_ps != want
            || got_rego_ps != want
            || !errors_ps.is_empty()
        {
            mismatches.push(format!(
                "request {n} {spec_req:?}\n  mcppol {want:?} ({:?})\n  cedar  {got_cedar:?} {errors:?}\n  rego   {got_rego:?}\n  cedar per server {got_cedar_ps:?} {errors_ps:?}\n  rego per server  {got_rego_ps:?}",
                d.rule_id
            ));
        }
    }
    if !mismatches.is_empty() {
        return Err(format!(
            "{size} rules: {} of {} requests disagree:\n{}",
            mismatches.len(),
            requests.len(),
            mismatches
                .into_iter()
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }

    // Allocations on mcppol's decision path.
    let ((), counts) = alloc::count(|| {
        for r in &requests {
            black_box(policy.decide(black_box(r)));
        }
    });
    let allocs_per_decision = counts.allocations as f64 / requests.len() as f64;

    // Time: interleaved samples.
    let n = requests.len();
    let rego_cell = std::cell::RefCell::new(&mut rego);
    let rego_ps_cell = std::cell::RefCell::new(&mut rego_ps);
    let mut passes: Vec<Pass<'_>> = vec![
        Box::new(|| {
            for r in &requests {
                black_box(policy.decide(black_box(r)));
            }
        }),
        Box::new(|| {
            for r in &cedar_requests {
                black_box(cedar.decide(black_box(r)));
            }
        }),
        Box::new(|| {
            let mut engine = rego_cell.borrow_mut();
            for i in &rego_inputs {
                black_box(engine.decide(black_box(i).clone()).ok());
            }
        }),
        Box::new(|| {
            for (_, r) in &work.requests {
                let context = prep.input(black_box(r));
                if let Ok(req) = cedar.request(&r.principal, &r.server, &r.tool, context) {
                    black_box(cedar.decide(&req));
                }
            }
        }),
        Box::new(|| {
            let mut engine = rego_cell.borrow_mut();
            for (_, r) in &work.requests {
                let input = regorus::Value::from(prep.input(black_box(r)));
                black_box(engine.decide(input).ok());
            }
        }),
        // Per server: the dispatch is in the timing.
        Box::new(|| {
            for (r, key) in cedar_ps_requests.iter().zip(&server_fs) {
                let set = &cedar_ps.engines[cedar_ps.slot(black_box(key))];
                black_box(set.decide(black_box(r)));
            }
        }),
        Box::new(|| {
            let mut ps = rego_ps_cell.borrow_mut();
            for (i, key) in rego_inputs.iter().zip(&server_fs) {
                let slot = ps.slot(black_box(key));
                black_box(ps.engines[slot].decide(black_box(i).clone()).ok());
            }
        }),
        Box::new(|| {
            for (_, r) in &work.requests {
                let context = prep.input(black_box(r));
                let slot = cedar_ps.slot(context["server_f"].as_str().unwrap_or_default());
                let tool_f = context["tool_f"].as_str().unwrap_or_default().to_string();
                let set = &cedar_ps.engines[slot];
                if let Ok(req) = set.request_scoped(&r.principal, &tool_f, context) {
                    black_box(set.decide(&req));
                }
            }
        }),
        Box::new(|| {
            let mut ps = rego_ps_cell.borrow_mut();
            for (_, r) in &work.requests {
                let input = prep.input(black_box(r));
                let slot = ps.slot(input["server_f"].as_str().unwrap_or_default());
                black_box(ps.engines[slot].decide(regorus::Value::from(input)).ok());
            }
        }),
    ];
    let kinds_at = passes.len();
    for (kind, _) in gen::KINDS.iter().enumerate() {
        let of_kind: Vec<mcppol::Request<'_>> = work
            .requests
            .iter()
            .zip(&requests)
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, r)| *r)
            .collect();
        passes.push(Box::new(move || {
            for r in &of_kind {
                black_box(policy.decide(black_box(r)));
            }
        }));
    }
    let medians = time_interleaved(&mut passes, n, o);
    // The per-kind passes decide PER_KIND requests, not n.
    let scale = n as f64 / gen::PER_KIND as f64;
    let kind_ns = [
        medians[kinds_at] * scale,
        medians[kinds_at + 1] * scale,
        medians[kinds_at + 2] * scale,
        medians[kinds_at + 3] * scale,
    ];
    Ok(Row {
        size,
        mcppol_ns: medians[0],
        cedar_ns: medians[1],
        regorus_ns: medians[2],
        cedar_e2e_ns: medians[3],
        regorus_e2e_ns: medians[4],
        cedar_ps_ns: medians[5],
        regorus_ps_ns: medians[6],
        cedar_ps_e2e_ns: medians[7],
        regorus_ps_e2e_ns: medians[8],
        sets: sets.len(),
        max_set_rules: sets.iter().map(|s| s.rules.len()).max().unwrap_or(0),
        load_ps_ms: [load_cedar_ps, load_rego_ps],
        memory_ps: [mem_cedar_ps, mem_rego_ps],
        kind_ns,
        allocs_per_decision,
        load_ms: [load_mcppol, load_cedar, load_rego],
        memory: [mem_mcppol, mem_cedar, mem_rego],
    })
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn fmt_bytes(b: i64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    eprintln!(
        "{} requests per size ({} per kind: deny, ask, allow, default); {} samples of ~{} ms per engine",
        gen::PER_KIND * gen::KINDS.len(),
        gen::PER_KIND,
        o.samples,
        o.sample_time.as_millis()
    );
    let mut rows = Vec::new();
    for &size in &o.sizes {
        eprintln!("{size} rules: generating, loading, checking, timing ...");
        match run_size(size, &o) {
            Ok(row) => {
                eprintln!(
                    "  all {} requests agree across mcppol, Cedar and regorus (flat and per server)",
                    gen::PER_KIND * gen::KINDS.len()
                );
                rows.push(row);
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    let base = rows.first().map(|r| r.mcppol_ns).unwrap_or(f64::NAN);
    let latency = |title: &str, pick: &dyn Fn(&Row) -> [f64; 4]| {
        println!();
        println!("{title}");
        println!(
            "{:>6} | {:>10} | {:>10} {:>7} | {:>10} {:>7} | {:>10} {:>7} | {:>10} {:>7} | {:>9}",
            "rules",
            "mcppol",
            "Cedar",
            "x",
            "regorus",
            "x",
            "Cedar e2e",
            "x",
            "rego e2e",
            "x",
            "vs 10"
        );
        for r in &rows {
            let [c, g, ce, ge] = pick(r);
            println!(
                "{:>6} | {:>10} | {:>10} {:>6.1}x | {:>10} {:>6.1}x | {:>10} {:>6.1}x | {:>10} {:>6.1}x | {:>8.2}x",
                r.size,
                fmt_ns(r.mcppol_ns),
                fmt_ns(c),
                c / r.mcppol_ns,
                fmt_ns(g),
                g / r.mcppol_ns,
                fmt_ns(ce),
                ce / r.mcppol_ns,
                fmt_ns(ge),
                ge / r.mcppol_ns,
                r.mcppol_ns / base,
            );
        }
    };
    latency(
        "decision latency, Cedar and regorus per server (median per decision over the mix; ratio = other / mcppol)",
        &|r| [r.cedar_ps_ns, r.regorus_ps_ns, r.cedar_ps_e2e_ns, r.regorus_ps_e2e_ns],
    );
    latency(
        "decision latency, Cedar and regorus flat (one set for all rules)",
        &|r| [r.cedar_ns, r.regorus_ns, r.cedar_e2e_ns, r.regorus_e2e_ns],
    );
    println!();
    println!("mcppol by request kind, and allocations per decision");
    println!(
        "{:>6} | {:>10} {:>10} {:>10} {:>10} | {:>12}",
        "rules", "deny", "ask", "allow", "default", "allocs/dec"
    );
    for r in &rows {
        println!(
            "{:>6} | {:>10} {:>10} {:>10} {:>10} | {:>12.2}",
            r.size,
            fmt_ns(r.kind_ns[0]),
            fmt_ns(r.kind_ns[1]),
            fmt_ns(r.kind_ns[2]),
            fmt_ns(r.kind_ns[3]),
            r.allocs_per_decision
        );
    }
    println!();
    println!("load (parse + compile, median) and memory kept by the loaded policy");
    println!(
        "{:>6} | {:>10} {:>10} {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10} {:>10} {:>10} | {:>12}",
        "rules",
        "mcppol",
        "Cedar",
        "regorus",
        "Cedar/srv",
        "rego/srv",
        "mcppol",
        "Cedar",
        "regorus",
        "Cedar/srv",
        "rego/srv",
        "sets (max)"
    );
    for r in &rows {
        println!(
            "{:>6} | {:>7.2} ms {:>7.2} ms {:>7.2} ms {:>7.2} ms {:>7.2} ms | {:>10} {:>10} {:>10} {:>10} {:>10} | {:>12}",
            r.size,
            r.load_ms[0],
            r.load_ms[1],
            r.load_ms[2],
            r.load_ps_ms[0],
            r.load_ps_ms[1],
            fmt_bytes(r.memory[0]),
            fmt_bytes(r.memory[1]),
            fmt_bytes(r.memory[2]),
            fmt_bytes(r.memory_ps[0]),
            fmt_bytes(r.memory_ps[1]),
            format!("{} ({})", r.sets, r.max_set_rules),
        );
    }
    if let Some(path) = &o.csv {
        let mut text = String::from(
            "rules,mcppol_ns,cedar_ns,regorus_ns,cedar_e2e_ns,regorus_e2e_ns,\
             deny_ns,ask_ns,allow_ns,default_ns,allocs_per_decision,\
             load_mcppol_ms,load_cedar_ms,load_regorus_ms,mem_mcppol_b,mem_cedar_b,mem_regorus_b,\
             cedar_ps_ns,regorus_ps_ns,cedar_ps_e2e_ns,regorus_ps_e2e_ns,\
             load_cedar_ps_ms,load_regorus_ps_ms,mem_cedar_ps_b,mem_regorus_ps_b,sets,max_set_rules\n",
        );
        for r in &rows {
            text.push_str(&format!(
                "{},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{:.3},{:.3},{:.3},{:.3},{},{},{},\
                 {:.1},{:.1},{:.1},{:.1},{:.3},{:.3},{},{},{},{}\n",
                r.size,
                r.mcppol_ns,
                r.cedar_ns,
                r.regorus_ns,
                r.cedar_e2e_ns,
                r.regorus_e2e_ns,
                r.kind_ns[0],
                r.kind_ns[1],
                r.kind_ns[2],
                r.kind_ns[3],
                r.allocs_per_decision,
                r.load_ms[0],
                r.load_ms[1],
                r.load_ms[2],
                r.memory[0],
                r.memory[1],
                r.memory[2],
                r.cedar_ps_ns,
                r.regorus_ps_ns,
                r.cedar_ps_e2e_ns,
                r.regorus_ps_e2e_ns,
                r.load_ps_ms[0],
                r.load_ps_ms[1],
                r.memory_ps[0],
                r.memory_ps[1],
                r.sets,
                r.max_set_rules,
            ));
        }
        let written = std::fs::File::create(path).and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            eprintln!("error: cannot write {path}: {e}");
            std::process::exit(1);
        }
        eprintln!("wrote {path}");
    }
}
