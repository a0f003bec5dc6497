#!/usr/bin/env bash
# Runs every fuzz target, one after the other, for SECONDS each (default
# 600), niced, with a 2 GiB RSS limit; each run's output goes to
# fuzz/logs/TARGET.log and its last line (executions, coverage) is
# printed. Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(parse_compile fmt_parse fmt decide_explain decide jsonrpc canonical_json paths shell claude_hook proxy)
fi
[ -d corpus ] || ./seed.sh
mkdir -p logs
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  nice -n 10 cargo +nightly fuzz run "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 \
    >"logs/$t.log" 2>&1
  status=$?
  echo "$t: exit $status; $(grep -E '^#[0-9]+.*DONE' "logs/$t.log" | tail -1)"
  grep -E 'stat::number_of_executed_units|SUMMARY|panicked at' "logs/$t.log" | head -3
done
