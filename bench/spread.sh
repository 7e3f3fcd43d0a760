#!/usr/bin/env bash
# bench/spread.sh: how much a run's time swings from one run to the next,
# with its run dir on disk (where traces are stored).
#
#   bench/spread.sh [EVALUA_BINARY ...]     default target/release/evalua
#
# For each binary: bench/agent.lua (500 cases x 5 trials, two tool calls a
# trial), --jobs 2, a warm-up run, then RUNS runs (default 5), each a fresh
# run dir under EVALUA_OUT_DIR (default $TMPDIR, i.e. disk), the previous one
# deleted first (as a user re-running would). Prints every run's wall and
# system time, then min / median / max and the spread (max / min). Give two
# binaries (the one before a change, the one after) to compare them in one
# session. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(target/release/evalua)
runs=${RUNS:-5}
cases=${CASES:-500}
tmp=$(mktemp -d)
base=${EVALUA_OUT_DIR:-${TMPDIR:-/tmp}}
outdir=$(mktemp -d -p "$base")
trap 'rm -rf "$tmp" "$outdir"' EXIT
: >"$tmp/results"
for bin in "${bins[@]}"; do
  [[ -x $bin ]] || { echo "spread.sh: no evalua binary at $bin" >&2; exit 2; }
  for i in $(seq 0 "$runs"); do
    out=$outdir/run
    rm -rf "$out"
    EVALUA_BENCH_CASES=$cases /usr/bin/time -f "%e %S" -o "$tmp/time" \
      "$bin" run bench/agent.lua --jobs 2 --out "$out" -q >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
    read -r secs sys <"$tmp/time"
    ((i == 0)) && continue   # warm-up
    printf '%-40s run %d: %6.2f s wall, %5.2f s system\n' "$bin" "$i" "$secs" "$sys"
    echo "$bin $secs $sys" >>"$tmp/results"
  done
  rm -rf "$outdir/run"
done
python3 - "$tmp/results" "$((cases * 5))" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    b, secs, sys_s = line.split()
    rows.setdefault(b, []).append((float(secs), float(sys_s)))
n = int(sys.argv[2])
print()
print("| binary | runs | wall min / median / max | spread (max/min) | trials/s (median) | system s (median) |")
print("|---|---|---|---|---|---|")
for b, r in rows.items():
    w = [x for x, _ in r]
    print(f"| {b} | {len(r)} | {min(w):.2f} / {statistics.median(w):.2f} / {max(w):.2f} s | {max(w) / min(w):.2f}x "
          f"| {n / statistics.median(w):,.0f} | {statistics.median([s for _, s in r]):.2f} |")
EOF
