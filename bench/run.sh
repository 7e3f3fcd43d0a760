#!/usr/bin/env bash
# bench/run.sh: throughput and peak memory of `evalua run` (release build).
#
#   throughput: bench/throughput.lua, 100 cases × 50 trials = 5,000 trials,
#               a scripted agent making 3 tool calls against a 1,000-row
#               fixture, 6 checks per trial, --jobs 2 (this machine has 2 cores)
#   memory:     the same suite, 100 cases × 500 trials = 50,000 trials
#
# Figures go to stdout; README.md quotes them. Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=${1:-target/release/evalua}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # name trials jobs
  /usr/bin/time -f "%e %M" -o "$out/$1.time" "$bin" run bench/throughput.lua --trials "$2" --jobs "$3" --out "$out/$1" -q >/dev/null || true
  read -r secs kb < "$out/$1.time"
  local n=$(( $2 * 100 ))
  printf '%-10s %6d trials  %6.2f s  %7.0f trials/s  peak RSS %5.1f MB\n' "$1" "$n" "$secs" "$(echo "$n / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
}

run warmup 5 2
for i in 1 2 3; do run "throughput$i" 50 2; done
run "one_job" 50 1
run memory 500 2
