#!/usr/bin/env bash
# bench/compare_inspect.sh: evalua and Inspect AI side by side on the same two workloads.
#
#   bench/compare_inspect.sh [EVALUA_BINARY]     default target/release/evalua (build it first:
#                                                cargo build --release)
#
#   plain  2,000 cases/samples x 5 trials/epochs; the agent (evalua: a scripted
#          agent; Inspect: mockllm scripted through custom_outputs) answers at
#          once; one contains check (check.answer{contains} / includes()).
#          bench/plain.lua and bench/inspect/tasks.py@plain.
#   agent  500 x 5; the agent calls lookup(item), update(item), then answers;
#          the sequence of executed calls is checked exactly (check.tools
#          {mode="exact"} / a scorer over state.messages).
#          bench/agent.lua and bench/inspect/tasks.py@agent.
#
# Each side runs every workload RUNS times (default 3), one process per run,
# timed from launch to exit; a run counts only if every trial passed. evalua
# runs with --jobs 2 (this machine's cores) and its run dir on disk; Inspect
# with --no-log-samples and --max-samples $MAX_SAMPLES (bench/inspect/README.md).
# Environment: RUNS, PLAIN_CASES (2000), AGENT_CASES (500), MAX_SAMPLES, INSPECT_VENV,
# SKIP_INSPECT=1 (evalua only), EVALUA_OUT_DIR (where evalua's run dirs go, default
# a temp folder on disk; /dev/shm takes the disk's noise out: see bench/inspect/README.md). Prints a table of median trials/s. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
evalua=${1:-${EVALUA:-target/release/evalua}}
runs=${RUNS:-3}
plain_cases=${PLAIN_CASES:-2000}
agent_cases=${AGENT_CASES:-500}
trials_per_case=5

[[ -x $evalua ]] || { echo "compare_inspect.sh: no evalua binary at $evalua (cargo build --release, or pass its path)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "${outdir:-}"' EXIT
results=$tmp/results
outdir=$(mktemp -d -p "${EVALUA_OUT_DIR:-$tmp}")
: >"$results"

# --- evalua ---------------------------------------------------------------
"$evalua" --version 2>/dev/null | head -1 || true
for w in plain agent; do
  case $w in plain) cases=$plain_cases ;; agent) cases=$agent_cases ;; esac
  trials=$((cases * trials_per_case))
  for i in $(seq 0 "$runs"); do   # run 0 is a warm-up (page cache), not counted
    out=$outdir/evalua-$w-$i
    EVALUA_BENCH_CASES=$cases /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" \
      "$evalua" run "bench/$w.lua" --jobs 2 --out "$out" -q >"$tmp/evalua.log" 2>&1 \
      || { cat "$tmp/evalua.log" >&2; exit 1; }
    python3 - "$out/trials.jsonl" "$trials" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [l for l in lines if l["outcome"] != "accepted"]
if len(lines) != int(sys.argv[2]) or bad:
    sys.exit(f"compare_inspect.sh: bad evalua run: {len(lines)} trials of {sys.argv[2]}, {len(bad)} not accepted")
EOF
    read -r secs user sys kb <"$tmp/time"
    rm -rf "$out"
    if ((i == 0)); then continue; fi
    cpu=$(echo "$user + $sys" | bc -l)
    printf '%-6s %-6s run %d: %6d trials in %6.2f s = %7.1f trials/s; CPU %6.2f s (sys %5.2f; %.0f µs a trial), peak RSS %4.0f MB (load %s)\n' \
      evalua "$w" "$i" "$trials" "$secs" "$(echo "$trials / $secs" | bc -l)" "$cpu" "$sys" "$(echo "$cpu * 1000000 / $trials" | bc -l)" \
      "$(echo "$kb / 1024" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
    echo "evalua $w $trials $secs $cpu $kb" >>"$results"
  done
done

# --- Inspect AI -------------------------------------------------------------
if [[ -z ${SKIP_INSPECT:-} ]]; then
  RESULTS=$results RUNS=$runs PLAIN_SAMPLES=$plain_cases AGENT_SAMPLES=$agent_cases EPOCHS=$trials_per_case \
    bench/inspect/run.sh
fi

# --- table ------------------------------------------------------------------
echo
python3 - "$results" <<'EOF'
import statistics, sys
rows, cpu, rss, size = {}, {}, {}, {}
for line in open(sys.argv[1]):
    tool, w, trials, secs, cpu_s, kb = line.split()
    rows.setdefault((w, tool), []).append(int(trials) / float(secs))
    cpu.setdefault((w, tool), []).append(float(cpu_s) * 1e6 / int(trials))
    rss.setdefault((w, tool), []).append(int(kb) / 1024)
    size[(w, tool)] = int(trials)
print(f"| workload | tool | trials a run | runs | trials/s (median) | min–max | CPU µs a trial (median) | peak RSS MB |")
print(f"|---|---|---|---|---|---|---|---|")
for w in ("plain", "agent"):
    for tool in ("evalua", "inspect"):
        r = rows.get((w, tool))
        if not r:
            continue
        print(f"| {w} | {tool} | {size[(w, tool)]:,} | {len(r)} | {statistics.median(r):,.1f} | {min(r):,.1f}–{max(r):,.1f} "
              f"| {statistics.median(cpu[(w, tool)]):,.0f} | {max(rss[(w, tool)]):,.0f} |")
    e, i = rows.get((w, "evalua")), rows.get((w, "inspect"))
    if e and i:
        ce, ci = statistics.median(cpu[(w, "evalua")]), statistics.median(cpu[(w, "inspect")])
        print(f"| {w} | evalua ÷ inspect | | | {statistics.median(e) / statistics.median(i):,.1f}× | | {ci / ce:,.1f}× less CPU | |")
EOF
