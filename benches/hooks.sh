#!/usr/bin/env bash
# `mcppol hook claude` per call at a 100-rule policy, process start
# included, run as Claude Code runs it (a command string through `sh -c`,
# the event on stdin), side by side with a minimal Python and a minimal
# Node hook that check a deny list (benches/hooks/), and `true` as the
# floor: median, p90 and p99 of each (docs/hosts.md, "Speed").
#
#   benches/hooks.sh                          # 300 calls of each
#   MCPPOL_BENCH_RUNS=1000 benches/hooks.sh
#
# Run on a quiet machine; the figures are whole-process wall times.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin mcppol
exec python3 benches/hooks/time_hooks.py --mcppol target/release/mcppol \
  --runs "${MCPPOL_BENCH_RUNS:-300}"
