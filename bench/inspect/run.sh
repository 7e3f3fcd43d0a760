#!/usr/bin/env bash
# bench/inspect/run.sh: Inspect AI's throughput on the two workloads of tasks.py.
#
#   bench/inspect/run.sh                  plain (2,000 x 5) and agent (500 x 5), 3 runs each
#   RUNS=5 WORKLOADS=agent bench/inspect/run.sh
#
# Environment: RUNS (3), WORKLOADS ("plain agent"), PLAIN_SAMPLES (2000),
# AGENT_SAMPLES (500), EPOCHS (5), MAX_SAMPLES (1: see README.md),
# INSPECT_VENV (bench/inspect/.venv), RESULTS (a file to append
# "inspect WORKLOAD TRIALS WALL_S CPU_S PEAK_RSS_KB" lines to, for bench/compare_inspect.sh).
#
# Each run is one `inspect eval` process on mockllm/model with --no-log-samples,
# timed by /usr/bin/time from launch to exit (Python's start-up and imports
# included, as the evalua side's time includes its own), with its CPU time
# (user + system: steadier than wall time on a shared machine) and peak RSS. A run counts only if its log says every
# sample completed and the accuracy is 1.0. Not a test: nothing here fails CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${INSPECT_VENV:-$here/.venv}
runs=${RUNS:-3}
workloads=${WORKLOADS:-plain agent}
epochs=${EPOCHS:-5}
max_samples=${MAX_SAMPLES:-1}
export INSPECT_BENCH_SAMPLES=${PLAIN_SAMPLES:-2000}
export INSPECT_BENCH_AGENT_SAMPLES=${AGENT_SAMPLES:-500}
export INSPECT_BENCH_EPOCHS=$epochs

if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("inspect-ai") != "0.3.285")' 2>/dev/null; then
  echo "run.sh: installing inspect-ai 0.3.285 into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -c "$here/constraints.txt"
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Check a finished run's log: every sample done and scored correct.
verify() { # LOG_DIR EXPECTED_TRIALS
  local f
  f=$(ls "$1"/*.eval)
  "$venv/bin/inspect" log dump --header-only "$f" | "$venv/bin/python" -c '
import json, sys
d = json.load(sys.stdin)
want = int(sys.argv[1])
r = d.get("results") or {}
acc = r["scores"][0]["metrics"]["accuracy"]["value"] if r.get("scores") else None
ok = d["status"] == "success" and r.get("completed_samples") == want and acc == 1.0
if not ok:
    sys.exit("run.sh: bad run: status %s, %s of %d samples, accuracy %s, error %s"
             % (d["status"], r.get("completed_samples"), want, acc, d.get("error")))
' "$2"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf 'inspect-ai %s, Python %s, %s cores, --max-samples %s --max-tasks 1\n' \
  "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("inspect-ai"))')" \
  "$("$venv/bin/python" -c 'import platform; print(platform.python_version())')" "$(nproc)" "$max_samples"

# The fixed cost of one `inspect eval`: 1 sample, 1 epoch.
d="$logs/startup"
start=$(date +%s.%N)
INSPECT_BENCH_SAMPLES=1 INSPECT_BENCH_EPOCHS=1 "$venv/bin/inspect" eval "$here/tasks.py@plain" --model mockllm/model \
  --no-log-samples --display none --log-dir "$d" >/dev/null 2>&1
end=$(date +%s.%N)
verify "$d" 1
printf '%-6s start-up (1 sample, 1 epoch): %.2f s\n' inspect "$(echo "$end - $start" | bc -l)"

for w in $workloads; do
  case $w in
    plain) samples=$INSPECT_BENCH_SAMPLES ;;
    agent) samples=$INSPECT_BENCH_AGENT_SAMPLES ;;
    *) echo "run.sh: unknown workload $w" >&2; exit 2 ;;
  esac
  trials=$((samples * epochs))
  rates=()
  for i in $(seq 1 "$runs"); do
    d="$logs/$w-$i"
    /usr/bin/time -f "%e %U %S %M" -o "$logs/$w-$i.time" \
      "$venv/bin/inspect" eval "$here/tasks.py@$w" --model mockllm/model --no-log-samples \
      --max-samples "$max_samples" --max-tasks 1 --display none --log-dir "$d" >"$logs/$w-$i.out" 2>&1 \
      || { cat "$logs/$w-$i.out" >&2; exit 1; }
    verify "$d" "$trials"
    read -r secs user sys kb <"$logs/$w-$i.time"
    rate=$(echo "$trials / $secs" | bc -l)
    rates+=("$rate")
    printf '%-6s %-6s run %d: %6d trials in %6.2f s = %7.1f trials/s; CPU %6.2f s (sys %5.2f; %.0f µs a trial), peak RSS %4.0f MB (load %s)\n' \
      inspect "$w" "$i" "$trials" "$secs" "$rate" "$(echo "$user + $sys" | bc -l)" "$sys" "$(echo "($user + $sys) * 1000000 / $trials" | bc -l)" \
      "$(echo "$kb / 1024" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
    if [[ -n ${RESULTS:-} ]]; then echo "inspect $w $trials $secs $(echo "$user + $sys" | bc -l) $kb" >>"$RESULTS"; fi
  done
  printf '%-6s %-6s median of %d runs: %.1f trials/s\n' inspect "$w" "$runs" "$(printf '%s\n' "${rates[@]}" | median)"
done
