#!/usr/bin/env bash
# bench/agentdojo.sh: grading AgentDojo's run logs with re-execution (issue 42),
# evalua against AgentDojo's own scoring of the same logs.
#
#   bench/agentdojo.sh [LOGDIR] [SUITE...]
#
# LOGDIR holds AgentDojo's logs as its runner writes them,
# <pipeline>/<suite>/<user_task>/<attack>/<injection_task>.json (default:
# written now by bench/agentdojo/logs.py into a temporary dir: ~25 min for the
# four suites). Per suite, over every pipeline's logs of it:
#
#   AgentDojo  bench/agentdojo/score.py: each log's calls replayed through
#              AgentDojo's runner, its utility and security functions deciding;
#              the time it prints itself (after its imports and suite loading)
#   evalua     `evalua grade suites/agentdojo/<suite>.lua --traces <each
#              pipeline's dir>`: wall time of the whole command (start-up and
#              suite loading included), every log re-executed
#
# and the agreement: evalua's verdicts against those recorded in the logs
# (summary.json's recorded_verdicts), and score.py's own against them.
# BIN=path/to/evalua measures another build (default: the release build);
# PY=python with agentdojo 0.1.35 (default /work/dojo/venv/bin/python);
# JOBS=n passes --jobs to evalua grade (default: its own, the number of cores);
# PIPELINES="ground_truth obedient" keeps those pipelines' logs only (default: all).
# Not a test: figures go to docs/benchmarks.md. Say how loaded the host was (uptime).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/work/dojo/venv/bin/python}
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=${CARGO_TARGET_DIR:-target}/release/evalua; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
logs=${1:-}
shift || true
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(workspace slack travel banking)
if [ -z "$logs" ] || [ ! -d "$logs" ]; then
  logs=${logs:-$out/logs}
  echo "writing AgentDojo's logs into $logs (bench/agentdojo/logs.py)..."
  "$PY" bench/agentdojo/logs.py "$logs" "${suites[@]}"
fi
echo "$(nproc) cores; $(uptime)"
jobs=()
[ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")

printf '%-10s %6s %12s %10s %8s  %-22s %s\n' suite logs "AgentDojo s" "evalua s" ratio "evalua = recorded" "AgentDojo = recorded"
for s in "${suites[@]}"; do
  dirs=()
  for d in "$logs"/*/"$s"; do
    p=$(basename "$(dirname "$d")")
    [ -d "$d" ] && { [ -z "${PIPELINES:-}" ] || [[ " $PIPELINES " == *" $p "* ]]; } && dirs+=("$d")
  done
  [ ${#dirs[@]} -gt 0 ] || { echo "$s: no logs under $logs/*/$s"; continue; }
  # AgentDojo's own scoring, every pipeline's logs of the suite.
  : > "$out/$s.jsonl"
  ad=0
  for d in "${dirs[@]}"; do
    "$PY" bench/agentdojo/score.py "$d" >> "$out/$s.jsonl" 2> "$out/$s.err" || { echo "score.py failed:"; tail -5 "$out/$s.err"; }
    t=$(sed -n 's/.* logs scored in \([0-9.]*\) s/\1/p' "$out/$s.err" | tail -1)
    ad=$(echo "$ad + ${t:-0}" | bc -l)
  done
  start=$(date +%s.%N)
  "$BIN" grade "suites/agentdojo/$s.lua" --traces "${dirs[@]}" --out "$out/run-$s" -q "${jobs[@]}" > /dev/null 2> "$out/$s.grade" \
    || [ -e "$out/run-$s/summary.json" ] || { echo "evalua grade failed:"; tail -5 "$out/$s.grade"; continue; }
  ev=$(echo "$(date +%s.%N) - $start" | bc -l)
  python3 - "$s" "$out" "$ad" "$ev" <<'PY'
import json, sys
suite, out, ad, ev = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(l) for l in open(f"{out}/{suite}.jsonl") if l.strip()]
own = sum([r["utility"], r["security"]] == [r["recorded"][0], r["recorded"][1]] for r in rows)
rv = json.load(open(f"{out}/run-{suite}/summary.json")).get("recorded_verdicts") or {}
u, sec = rv.get("utility") or {}, rv.get("security") or {}
agree = f"u {u.get('agree')}/{u.get('n')} s {sec.get('agree')}/{sec.get('n')}"
print(f"{suite:<10} {len(rows):>6} {ad:>12.2f} {ev:>10.2f} {ad / ev:>7.1f}x  {agree:<22} {own} of {len(rows)}")
with open(f"{out}/totals", "a") as f:
    f.write(f"{len(rows)} {ad} {ev} {rv.get('items', 0)} {rv.get('disagreements_total', 0)} {own}\n")
PY
done
if [ -s "$out/totals" ]; then
  awk '{n+=$1; a+=$2; e+=$3; i+=$4; d+=$5; o+=$6} END {
    printf "%-10s %6d %12.2f %10.2f %7.1fx  %-22s %d of %d\n", "all", n, a, e, a/e, d " disagree, " i " logs", o, n }' "$out/totals"
fi
