#!/usr/bin/env bash
# bench/regrade.sh: what keeping each trial's changes costs, and how fast
# `evalua regrade` re-grades a 5,000-trial run dir (release build).
#
#   cost:    bench/throughput.lua, 100 cases × 50 trials = 5,000 trials, --jobs 2,
#            with and without --no-state (3 runs each, alternated): the wall time
#            and the run dir's size (bytes, files) with and without the kept changes
#   regrade: the same run dir re-graded (3 times), --jobs 2
#
# Figures go to stdout; docs/benchmarks.md quotes them. Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/evalua
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
trials=${TRIALS:-50}
n=$(( trials * 100 ))

timed() { # name cmd... ; prints seconds
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$out/$name.time" "$@" >/dev/null 2>"$out/$name.err" || true
  read -r secs kb < "$out/$name.time"
  echo "$secs $kb"
}

size() { # dir -> "bytes files"
  echo "$(du -sb "$1" | cut -f1) $(find "$1" -type f | wc -l)"
}

row() { # label trials secs kb bytes files
  printf '%-22s %6d trials  %6.2f s  %6.0f trials/s  peak RSS %5.1f MB  run dir %6.1f MB in %6d files\n' \
    "$1" "$2" "$3" "$(echo "$2 / $3" | bc -l)" "$(echo "$4 / 1024" | bc -l)" "$(echo "$5 / 1048576" | bc -l)" "$6"
}

timed warmup "$bin" run bench/throughput.lua --trials 5 --jobs 2 --out "$out/warmup" -q >/dev/null
for i in 1 2 3; do
  for mode in state nostate; do
    flag=(); [ "$mode" = nostate ] && flag=(--no-state)
    read -r secs kb < <(timed "$mode$i" "$bin" run bench/throughput.lua --trials "$trials" --jobs 2 "${flag[@]}" --out "$out/$mode$i" -q)
    read -r bytes files < <(size "$out/$mode$i")
    row "run, $mode ($i)" "$n" "$secs" "$kb" "$bytes" "$files"
  done
done
read -r sb sf < <(size "$out/state1"); read -r nb nf < <(size "$out/nostate1")
printf 'kept changes: +%.1f KB and +%d files per 1,000 trials (%d changeset files)\n' \
  "$(echo "($sb - $nb) * 1000 / $n / 1024" | bc -l)" "$(( (sf - nf) * 1000 / n ))" \
  "$(find "$out/state1/traces" -name '*.changeset' | wc -l)"
for i in 1 2 3; do
  read -r secs kb < <(timed "regrade$i" "$bin" regrade "$out/state1" --jobs 2 --out "$out/regrade$i" -q)
  read -r bytes files < <(size "$out/regrade$i")
  row "regrade ($i)" "$n" "$secs" "$kb" "$bytes" "$files"
  rm -rf "$out/regrade$i"
done
