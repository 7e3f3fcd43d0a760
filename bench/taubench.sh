#!/usr/bin/env bash
# bench/taubench.sh: τ-bench inside evalua (issue 26), release build.
#
#   gold     `evalua run suites/taubench/{airline,retail}.lua --agent gold`
#            (50 and 115 held-out trials): trials/s and peak RSS
#   grade    `evalua grade suites/taubench/airline.lua` on 200 recorded airline
#            trajectories in τ-bench's results format (bench/taubench_results.py:
#            4 trials of each of the 50 tasks, made with τ-bench's own tools;
#            needs ../shared/taubench or TAUBENCH=path), every call re-executed:
#            wall time, peak RSS, and whether every outcome is τ-bench's reward
#            (RESULTS=file: grade that file instead of making one)
#
# BIN=path/to/evalua measures another build (default: the release build).
# Not a test: figures go to docs/benchmarks.md. Say how loaded the host was (uptime).
set -euo pipefail
cd "$(dirname "$0")/.."
TAUBENCH=${TAUBENCH:-../shared/taubench}
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
bin=$BIN
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp -r suites/taubench "$out/taubench"   # a held-out run appends to the ledger beside its suite
uptime

timed() { # name items cmd...
  local name=$1 items=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$out/t" "$@" >/dev/null 2>"$out/err" || { echo "$name failed:"; head -5 "$out/err"; }
  read -r secs kb < <(tail -1 "$out/t")
  printf '%-28s %4d trials  %6.2f s  %7.1f trials/s  peak RSS %6.1f MB\n' "$name" "$items" "$secs" \
    "$(echo "$items / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
}

timed "airline gold (--jobs 2)" 50 "$bin" run "$out/taubench/airline.lua" --agent gold --jobs 2 -q --out "$out/air"
timed "retail gold (--jobs 2)" 115 "$bin" run "$out/taubench/retail.lua" --agent gold --split held_out --jobs 2 -q --out "$out/ret"
# τ-bench's own reward code takes minutes to make them: RESULTS=file reuses a made file.
if [ -n "${RESULTS:-}" ]; then cp "$RESULTS" "$out/results.json"
else python3 bench/taubench_results.py "$TAUBENCH" airline 4 > "$out/results.json"; fi
timed "grade 200 re-executed" 200 "$bin" grade "$out/taubench/airline.lua" --traces "$out/results.json" --jobs 2 -q --out "$out/g"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
want = {(f"task_{e['task_id']}", e["trial"] + 1): e["reward"] for e in json.load(open(f"{out}/results.json"))}
got = {(r["case"], r["trial"]): 1.0 if r["outcome"] == "accepted" else 0.0 for r in map(json.loads, open(f"{out}/g/trials.jsonl"))}
same = sum(got.get(k) == v for k, v in want.items())
print(f"graded outcomes equal to τ-bench's rewards: {same} of {len(want)} ({int(sum(want.values()))} rewards of 1)")
PY
