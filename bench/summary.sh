#!/usr/bin/env bash
# bench/summary.sh: what the figures cost. Writes synthetic run dirs of
# N cases x 5 trials (about 70% accepted, no traces) and times `evalua report`
# on each: reading trials.jsonl, the two-stage bootstrap of both views
# (2,000 resamples, pass^k / pass@k for k = 1..5), the gates and the three
# reports. Uses the debug build (warm in CI); RELEASE=1 uses --release.
# REFERENCE=1 gives every case a reference solution (3 calls, 1,000 tokens),
# so the efficiency figures and their bootstrap are timed too.
# Figures go to stdout; docs/benchmarks.md quotes them. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RELEASE:-0}" = 1 ]; then cargo build --release -q; bin=target/release/evalua; else cargo build -q; bin=target/debug/evalua; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for cases in ${CASES:-100 1000 10000}; do
  dir="$out/run$cases"
  python3 - "$dir" "$cases" "${REFERENCE:-0}" <<'PY'
import json, os, random, sys
d, n, ref = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
os.makedirs(os.path.join(d, "traces"), exist_ok=True)
rng = random.Random(n)
cases = [{"id": f"c{i}", "trials": 5} for i in range(n)]
if ref:
    for c in cases:
        c["reference"] = {"calls": 3, "tokens": 1000, "max_ratio": 2}
json.dump({"evalua_version": "bench", "run_id": "bench", "suite": {"name": "bench"}, "cases": cases, "seed": 1,
           "gates": [{"name": "accepted", "threshold": 0.5, "on": "point"}]}, open(os.path.join(d, "manifest.json"), "w"))
with open(os.path.join(d, "trials.jsonl"), "w") as f:
    for c in cases:
        p = rng.random()
        for t in range(1, 6):
            ok = rng.random() < p
            calls = rng.randint(2, 8) if ref else 1
            tokens = rng.randint(500, 3000) if ref else 0
            f.write(json.dumps({"case": c["id"], "trial": t, "seed": t, "outcome": "accepted" if ok else "failed",
                "ended": "final", "checks": [{"name": "x", "passed": ok, "critical": False, "evidence": None, "error": None}],
                "calls": {"requested": calls, "executed": calls, "failed": 0, "rejected": 0, "denied": 0, "faulted": 0},
                "usage": {"input_tokens": tokens, "output_tokens": 0, "cost_usd": 0.001, "turns": 1, "tool_calls": calls, "wall_ms": 5.0},
                "wall_ms": 5.0, "answer": "", "error": None, "trace": f"traces/{c['id']}.{t}.json"}) + "\n")
PY
  /usr/bin/time -f "%e %M %U" -o "$out/time" "$bin" report "$dir" >/dev/null || true
  read -r secs kb cpu < <(tail -1 "$out/time")
  printf '%6d cases x 5 trials%s: evalua report %s s (%s s of CPU), peak RSS %d MB (%s build)\n' "$cases" \
    "$([ "${REFERENCE:-0}" = 1 ] && echo ' with references')" "$secs" "$cpu" "$((kb / 1024))" "$(basename "$(dirname "$bin")")"
done
