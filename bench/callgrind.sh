#!/usr/bin/env bash
# bench/callgrind.sh [EVALUA_BIN]: instructions per trial of bench/throughput.lua
# (100 cases × 5 trials, --jobs 1), counted by valgrind's callgrind. Unlike
# wall time, the count repeats exactly whatever else the machine is doing,
# so it compares two builds (e.g. before and after a refactor) on a busy box.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/evalua}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "$bin" run bench/throughput.lua \
  --trials 5 --jobs 1 --out "$out/run" -q >/dev/null 2>"$out/log" || true
total=$(grep -o 'Collected : [0-9]*' "$out/log" | grep -o '[0-9]*$')
trials=$(wc -l < "$out/run/trials.jsonl")
printf '%s: %d instructions, %d trials, %.2f M instructions/trial\n' "$bin" "$total" "$trials" "$(echo "$total / $trials / 1000000" | bc -l)"
