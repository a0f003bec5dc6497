#!/usr/bin/env bash
# Prints a Markdown table of the last run of each target from
# fuzz/logs/TARGET.log (what fuzz/run.sh writes): executions, seconds,
# coverage and corpus at the end, and whether it crashed.
set -uo pipefail
cd "$(dirname "$0")"
echo "| target | seconds | executions | coverage (edges) | corpus | crashes |"
echo "|---|---|---|---|---|---|"
for log in logs/*.log; do
  t=$(basename "$log" .log)
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE 'in [0-9]+' | grep -oE '[0-9]+')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+')
  corp=$(echo "$last" | grep -oE 'corp: [0-9]+' | grep -oE '[0-9]+')
  crashes=$(grep -c 'SUMMARY: libFuzzer' "$log")
  echo "| \`$t\` | ${secs:-?} | ${execs:-?} | ${cov:-?} | ${corp:-?} | $crashes |"
done
