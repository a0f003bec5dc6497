//! What `mcppol proxy` adds to a `tools/call`: the same echo server called
//! directly and through the proxy, one call at a time over pipes, each
//! call timed from writing the request to reading the answer. A small
//! runner, not criterion: it reports the median and the 99th percentile of
//! each, and their differences (docs/performance.md).
//!
//!     cargo bench --bench proxy            # 5,000 calls each way
//!     MCPPOL_BENCH_CALLS=500 cargo bench --bench proxy
//!
//! The server is this program itself, started with
//! `MCPPOL_BENCH_ECHO_SERVER=1`: a minimal synchronous MCP server with one
//! tool, so the figures are the proxy's cost and the pipes', not a
//! server's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "common/stdio_echo.rs"]
mod stdio_echo;
use stdio_echo::{echo_server, Session, POLICY};

impl Session {
    /// Times `n` calls.
    fn time_calls(&mut self, n: usize) -> Vec<Duration> {
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let path = format!("/srv/work/file-{i}.txt");
            let started = Instant::now();
            let v = self.request(
                "tools/call",
                json!({"name": "echo", "arguments": {"path": path}}),
            );
            times.push(started.elapsed());
            assert_eq!(v["result"]["content"][0]["text"], json!(path), "{v}");
        }
        times
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
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

    let mut direct_cmd = Command::new(&me);
    direct_cmd.env("MCPPOL_BENCH_ECHO_SERVER", "1");
    let mut proxied_cmd = Command::new(env!("CARGO_BIN_EXE_mcppol"));
    proxied_cmd
        .args(["proxy", "--policy"])
        .arg(&policy)
        .args(["--server-id", "bench", "--"])
        .arg(&me)
        .env("MCPPOL_BENCH_ECHO_SERVER", "1")
        .env("MCPPOL_LOG", "error");

    let mut direct = Session::start(direct_cmd);
    let mut proxied = Session::start(proxied_cmd);
    // Warm up both, then alternate blocks so drift hits both alike.
    direct.time_calls(calls / 10 + 1);
    proxied.time_calls(calls / 10 + 1);
    let (mut d, mut p) = (Vec::new(), Vec::new());
    let block = (calls / 10).max(1);
    while d.len() < calls {
        d.extend(direct.time_calls(block));
        p.extend(proxied.time_calls(block));
    }
    d.sort();
    p.sort();
    let (dm, d99) = (percentile(&d, 0.5), percentile(&d, 0.99));
    let (pm, p99) = (percentile(&p, 0.5), percentile(&p, 0.99));
    println!("tools/call, {} calls each, one at a time", d.len());
    println!(
        "  direct   median {:8.1} us   p99 {:8.1} us",
        us(dm),
        us(d99)
    );
    println!(
        "  proxied  median {:8.1} us   p99 {:8.1} us",
        us(pm),
        us(p99)
    );
    println!(
        "  added    median {:8.1} us   p99 {:8.1} us",
        us(pm) - us(dm),
        us(p99) - us(d99)
    );
}
