#!/usr/bin/env bash
# bench/interleave.sh: what playing two agents in one interleaved run costs,
# against two separate runs of the same agents.
#
# Suite: bench/interleave.lua, 10 cases x 100 trials, two scripted agents
# (2,000 trials either way). For each of ROUNDS rounds (default 5), in
# alternating order: `evalua run --agent A --agent B` (one interleaved run,
# which also writes the paired comparison and a third report), and
# `evalua run --agent A` then `--agent B` (two runs). Prints each round and
# the medians; the overhead is the difference of the medians per trial.
# BIN=path/to/evalua measures another build (default: the release build).
# JOBS (default 2) is passed as --jobs to every run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
ROUNDS=${ROUNDS:-5}
JOBS=${JOBS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
now() { date +%s.%N; }
interleaved() {
  local s; s=$(now)
  "$BIN" run bench/interleave.lua --agent A --agent B --jobs "$JOBS" --out "$out/i$1" -q >/dev/null 2>&1 || true
  echo "$(now) - $s" | bc -l
}
separate() {
  local s; s=$(now)
  "$BIN" run bench/interleave.lua --agent A --jobs "$JOBS" --out "$out/a$1" -q >/dev/null 2>&1 || true
  "$BIN" run bench/interleave.lua --agent B --jobs "$JOBS" --out "$out/b$1" -q >/dev/null 2>&1 || true
  echo "$(now) - $s" | bc -l
}
# Both must have run every trial, or the timing says nothing.
"$BIN" run bench/interleave.lua --agent A --agent B --jobs "$JOBS" --out "$out/check" -q >/dev/null 2>&1 || true
python3 - "$out/check" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
for a in s["agents"]:
    assert a["figures"]["trials"] == 1000, (a["name"], a["figures"]["trials"])
PY
is=(); ss=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then i=$(interleaved "$r"); s=$(separate "$r"); else s=$(separate "$r"); i=$(interleaved "$r"); fi
  printf 'round %d: interleaved %.2f s, two runs %.2f s\n' "$r" "$i" "$s"
  is+=("$i"); ss+=("$s")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mi=$(median "${is[@]}"); ms=$(median "${ss[@]}")
printf 'median: interleaved %.2f s, two runs %.2f s -> %+.3f ms per trial (2000 trials, --jobs %s)\n' \
  "$mi" "$ms" "$(echo "($mi - $ms) * 1000 / 2000" | bc -l)" "$JOBS"
uptime
