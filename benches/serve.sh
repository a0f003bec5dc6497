#!/usr/bin/env bash
# `mcppol serve` over loopback HTTP (docs/hosts.md, "Speed"): median, p90
# and p99 of `POST /v1/decide` (and `/v1/hooks/claude`) at one
# connection, then decisions a second at 2, 4 and 8 connections with the
# CPU that the client and the server each used (they share the machine).
#
#   benches/serve.sh
#   MCPPOL_BENCH_REQUESTS=50000 MCPPOL_BENCH_SECONDS=10 benches/serve.sh
#
# Run on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --bin mcppol
cargo build --release --locked -p mcppol-serve-load
exec target/release/mcppol-serve-load target/release/mcppol
