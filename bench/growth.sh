#!/usr/bin/env bash
# bench/growth.sh: how a trial's cost grows with the suite's size.
#
#   bench/growth.sh [EVALUA_BINARY]        default target/release/evalua (cargo build --release first)
#
# bench/plain.lua at CASES cases x 1 trial (default "1000 10000 100000"),
# --jobs 2, RUNS runs each (default 3, the median counted), one process per
# run timed with /usr/bin/time from launch to exit (start-up, loading the
# suite, planning, the trials, summary and reports all included). Prints wall
# time, time per trial, trials/s and peak RSS, then the ratio of the time per
# trial at the largest size to the one at the smallest (goal: within 1.5x).
# EVALUA_OUT_DIR: where the run dirs go (default a temp folder on disk).
# Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
evalua=${1:-${EVALUA:-target/release/evalua}}
sizes=${CASES:-1000 10000 100000}
runs=${RUNS:-3}
[[ -x $evalua ]] || { echo "growth.sh: no evalua binary at $evalua (cargo build --release, or pass its path)" >&2; exit 2; }
tmp=$(mktemp -d)
outdir=$(mktemp -d -p "${EVALUA_OUT_DIR:-$tmp}")
trap 'rm -rf "$tmp" "$outdir"' EXIT

printf '| cases x trials | run | wall | µs a trial | trials/s | peak RSS |\n|---|---|---|---|---|---|\n'
: >"$tmp/results"
for n in $sizes; do
  for i in $(seq 1 "$runs"); do
    out=$outdir/run-$n-$i
    EVALUA_BENCH_CASES=$n /usr/bin/time -f "%e %M" -o "$tmp/time" \
      "$evalua" run bench/plain.lua --trials 1 --jobs 2 --out "$out" -q >"$tmp/log" 2>&1 \
      || { cat "$tmp/log" >&2; exit 1; }
    lines=$(wc -l <"$out/trials.jsonl")
    [[ $lines -eq $n ]] || { echo "growth.sh: $lines trials of $n" >&2; exit 1; }
    read -r secs kb <"$tmp/time"
    rm -rf "$out"
    printf '| %d x 1 | %d | %.2f s | %.1f | %.0f | %.0f MB |\n' "$n" "$i" "$secs" \
      "$(echo "$secs * 1000000 / $n" | bc -l)" "$(echo "$n / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
    echo "$n $secs $kb" >>"$tmp/results"
  done
done
python3 - "$tmp/results" <<'EOF'
import statistics, sys
per = {}
rss = {}
for line in open(sys.argv[1]):
    n, secs, kb = line.split()
    per.setdefault(int(n), []).append(float(secs) * 1e6 / int(n))
    rss.setdefault(int(n), []).append(int(kb) / 1024)
sizes = sorted(per)
print()
print("| cases | µs a trial (median) | peak RSS (max) |")
print("|---|---|---|")
for n in sizes:
    print(f"| {n:,} | {statistics.median(per[n]):,.1f} | {max(rss[n]):,.0f} MB |")
lo, hi = sizes[0], sizes[-1]
print(f"\nper-trial time at {hi:,} cases / at {lo:,}: {statistics.median(per[hi]) / statistics.median(per[lo]):.2f}x")
EOF
