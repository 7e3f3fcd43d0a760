#!/usr/bin/env bash
# bench/summary.sh: what the figures cost. Writes synthetic run dirs of
# N cases x 5 trials (about 70% accepted, no traces) and times `evalua report`
# on each: reading trials.jsonl, the two-stage bootstrap of both views
# (2,000 resamples, pass^k / pass@k for k = 1..5), the gates and the three
# reports. Uses the debug build (warm in CI); RELEASE=1 uses --release.
# Figures go to stdout; docs/benchmarks.md quotes them. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RELEASE:-0}" = 1 ]; then cargo build --release -q; bin=target/release/evalua; else cargo build -q; bin=target/debug/evalua; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for cases in ${CASES:-100 1000 10000}; do
  dir="$out/run$cases"
  python3 - "$dir" "$cases" <<'PY'
import json, os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.join(d, "traces"), exist_ok=True)
rng = random.Random(n)
cases = [{"id": f"c{i}", "trials": 5} for i in range(n)]
json.dump({"evalua_version": "bench", "run_id": "bench", "suite": {"name": "bench"}, "cases": cases, "seed": 1,
           "gates": [{"name": "accepted", "threshold": 0.5, "on": "point"}]}, open(os.path.join(d, "manifest.json"), "w"))
with open(os.path.join(d, "trials.jsonl"), "w") as f:
    for c in cases:
        p = rng.random()
        for t in range(1, 6):
            ok = rng.random() < p
            f.write(json.dumps({"case": c["id"], "trial": t, "seed": t, "outcome": "accepted" if ok else "failed",
                "ended": "final", "checks": [{"name": "x", "passed": ok, "critical": False, "evidence": None, "error": None}],
                "calls": {"requested": 1, "executed": 1, "failed": 0, "rejected": 0, "denied": 0, "faulted": 0},
                "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.001, "turns": 1, "tool_calls": 1, "wall_ms": 5.0},
                "wall_ms": 5.0, "answer": "", "error": None, "trace": f"traces/{c['id']}.{t}.json"}) + "\n")
PY
  /usr/bin/time -f "%e %M" -o "$out/time" "$bin" report "$dir" >/dev/null || true
  read -r secs kb < <(tail -1 "$out/time")
  printf '%6d cases x 5 trials: evalua report %s s, peak RSS %d MB (%s build)\n' "$cases" "$secs" "$((kb / 1024))" "$(basename "$(dirname "$bin")")"
done
