//! What an OTLP exporter that is down costs a governed call: the same echo
//! server through `mcppol proxy` without an exporter and with
//! `--otlp-endpoint` pointed at a port nothing listens on, one call at a
//! time over pipes, each timed from writing the request to reading the
//! answer. Every call's answer (allowed or refused, and why) must be the
//! same both ways; the median and the 99th percentile of each are
//! printed, and the median's change (docs/fleet.md).
//!
//!     cargo bench --bench otlp            # 5,000 calls each way
//!     MCPPOL_BENCH_CALLS=500 cargo bench --bench otlp
//!     MCPPOL_BENCH_BIN=/path/to/other/mcppol cargo bench --bench otlp
//!
//! The server is this program itself, started with
//! `MCPPOL_BENCH_ECHO_SERVER=1` (as in benches/proxy.rs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "common/stdio_echo.rs"]
mod stdio_echo;
use stdio_echo::{echo_server, Session, POLICY};

impl Session {
    /// Times calls `from..from + n` (every fourth one outside /srv, so
    /// denied) and gives back each call's answer.
    fn time_calls(&mut self, from: usize, n: usize) -> (Vec<Duration>, Vec<Value>) {
        let mut times = Vec::with_capacity(n);
        let mut answers = Vec::with_capacity(n);
        for i in from..from + n {
            let path = if i % 4 == 3 {
                format!("/etc/file-{i}")
            } else {
                format!("/srv/work/file-{i}.txt")
            };
            let started = Instant::now();
            let v = self.request(
                "tools/call",
                json!({"name": "echo", "arguments": {"path": path}}),
            );
            times.push(started.elapsed());
            answers.push(v["result"].clone());
        }
        (times, answers)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn proxy(policy: &std::path::Path, me: &std::path::Path, otlp: Option<&str>) -> Session {
    // `MCPPOL_BENCH_BIN` runs another build (a before/after pair).
    let bin =
        std::env::var_os("MCPPOL_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mcppol").into());
    let mut cmd = Command::new(bin);
    cmd.args(["proxy", "--policy"]).arg(policy);
    if let Some(url) = otlp {
        cmd.args(["--otlp-endpoint", url]);
    }
    cmd.args(["--server-id", "bench", "--"])
        .arg(me)
        .env("MCPPOL_BENCH_ECHO_SERVER", "1")
        .env("MCPPOL_LOG", "error")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    Session::start(cmd)
}

fn main() {
    if std::env::var_os("MCPPOL_BENCH_ECHO_SERVER").is_some() {
        echo_server();
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once, short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let calls: usize = std::env::var("MCPPOL_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 50 } else { 5000 });
    let me = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("bench.mcppol");
    std::fs::write(&policy, POLICY).unwrap();
    // A port the OS gave and took back: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}");

    let mut plain = proxy(&policy, &me, None);
    let mut exporting = proxy(&policy, &me, Some(&dead));
    // Warm up both, then alternate blocks so drift hits both alike.
    plain.time_calls(0, calls / 10 + 1);
    exporting.time_calls(0, calls / 10 + 1);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let block = (calls / 10).max(1);
    let mut done = 0;
    while done < calls {
        let (ta, answers_a) = plain.time_calls(done, block);
        let (tb, answers_b) = exporting.time_calls(done, block);
        assert_eq!(answers_a, answers_b, "an exporter changed a decision");
        a.extend(ta);
        b.extend(tb);
        done += block;
    }
    a.sort();
    b.sort();
    let (am, a99) = (percentile(&a, 0.5), percentile(&a, 0.99));
    let (bm, b99) = (percentile(&b, 0.5), percentile(&b, 0.99));
    println!(
        "tools/call through mcppol proxy, {} calls each, one at a time (a quarter denied)",
        a.len()
    );
    println!(
        "  no exporter             median {:8.1} us   p99 {:8.1} us",
        us(am),
        us(a99)
    );
    println!(
        "  exporter at a dead port median {:8.1} us   p99 {:8.1} us",
        us(bm),
        us(b99)
    );
    println!(
        "  median change {:+.1}% (answers identical)",
        (us(bm) / us(am) - 1.0) * 100.0
    );
}
