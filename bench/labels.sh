#!/usr/bin/env bash
# bench/labels.sh: human labels (SPEC §15).
#
# 1. The label store's append cost: `evalua view --annotator` posting labels
#    (POST /api/label: the record and trace read, the item's data built, one
#    locked O_APPEND write, fsync, the store index brought up to date) timed
#    from Python, into an empty store and into one that already holds 100,000
#    lines (about 620 bytes each, written by this script). An append never reads the
#    store: its cost must not grow with it.
# 2. Reading a 100,000-line store: `evalua labels agree` (κ, α and their
#    bootstraps), `labels split`, and the viewer's first look at the store.
# 3. Labelling throughput with the keyboard in headless Chromium (WebDriver,
#    as bench/view.sh): open a failed trial, then p, f, u on its three rows
#    and n for the next unlabelled trial, 40 trials; the page measures each
#    label's round trip from the key press to the saved state drawn
#    (window.__evalua_label_ms).
#
# Release build (RELEASE=0: the debug build). Figures go to stdout;
# docs/benchmarks.md quotes them. Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RELEASE:-1}" = 1 ]; then cargo build --release -q; bin=$PWD/target/release/evalua; else cargo build -q; bin=$PWD/target/debug/evalua; fi
out=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$out"' EXIT
echo "load: $(uptime)"

mkdir -p "$out/suites"
cp bench/labels.lua "$out/suites/labels_bench.lua"
(cd "$out" && env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u EVALUA_OPENAI_BASE_URL \
  "$bin" run suites/labels_bench.lua --out runs/labels_bench/r1 -q > /dev/null) || true

# A 100,000-line store: 6,667 items x 5 annotators x (2 criteria + the whole item); the annotators mostly agree.
python3 - "$out/big.jsonl" <<'PY'
import json, sys
data = {"input": "Refund the missing unit of order P-9001 and tell the customer.", "answer": "Done.",
        "calls": [{"name": "lookup_order", "args": {"order_id": "P-9001"}, "status": "executed", "result": {"total": 59.7}}],
        "messages": [{"role": "user", "content": "Refund the missing unit."}, {"role": "agent", "content": "Done."}],
        "outbox": [], "case": "refund_001", "rubric": "reply"}
crit = ["The reply states the refunded amount", "The reply is polite", None]
with open(sys.argv[1], "w") as f:
    n = 0
    while n < 100000:
        i = n // 15
        who = ["ana", "bo", "cy", "dee", "eli"][(n // 3) % 5]
        c = crit[n % 3]
        v = ["pass", "fail", "unsure"][(i * 7 + (n // 3) % 5 * 3 + n % 3) % 3 if (n % 7) else 0]
        f.write(json.dumps({"item": "bench/refund_%05d/1" % i, "annotator": who, "criterion": c, "verdict": v,
                            "tags": ["amount_missing"] if v == "fail" else [], "note": "", "data": data,
                            "run": "bench", "trace_id": "0" * 32, "at": "2026-12-01T10:00:00Z"}) + "\n")
        n += 1
PY
printf 'store of 100,000 lines: %s\n' "$(du -h "$out/big.jsonl" | cut -f1)"

base=
start_view() { # store name: sets $base
  (cd "$out" && exec "$bin" view "$out/runs" --port 0 --annotator bench --labels "$1" > "$out/view.$2.out" 2>&1) &
  pids+=($!)
  for _ in $(seq 200); do grep -q 'http://' "$out/view.$2.out" 2>/dev/null && break; sleep 0.05; done
  base=$(grep -o 'http://127.0.0.1:[0-9]*' "$out/view.$2.out")
}
start_view "$out/small.jsonl" small; small=$base
start_view "$out/big.jsonl" big; big=$base

python3 - "$small" "$big" <<'PY'
import json, re, statistics, sys, time, urllib.request
def post_many(base, n):
    page = urllib.request.urlopen(base + "/run?r=0%3Alabels_bench%2Fr1").read().decode()
    token = re.search(r'"token":"([0-9a-f]{32})"', page).group(1)
    crit = ["The reply states the refunded amount", "The reply is polite", None]
    ms = []
    for i in range(n):
        body = json.dumps({"r": "0:labels_bench/r1", "case": "refund_%03d" % (1 + i % 100), "trial": 1 + i % 2,
                           "criterion": crit[i % 3], "verdict": ["pass", "fail", "unsure"][i % 3], "tags": [], "note": ""}).encode()
        req = urllib.request.Request(base + "/api/label", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "X-Evalua-Token": token})
        t0 = time.perf_counter()
        urllib.request.urlopen(req).read()
        ms.append((time.perf_counter() - t0) * 1000)
    return ms
for name, base in [("empty store", sys.argv[1]), ("100,000-line store", sys.argv[2])]:
    t0 = time.perf_counter()
    urllib.request.urlopen(base + "/api/trial?r=0%3Alabels_bench%2Fr1&case=refund_001&trial=1").read()
    first = (time.perf_counter() - t0) * 1000
    ms = post_many(base, 300)
    ms.sort()
    print("append (POST /api/label) into the %-18s first trial opened %6.0f ms; 300 labels: median %.1f ms, p95 %.1f ms, max %.1f ms"
          % (name + ":", first, statistics.median(ms), ms[int(len(ms) * 0.95)], ms[-1]))
PY

t0=$(date +%s%N)
"$bin" labels agree "$out/big.jsonl" --json > /dev/null 2>&1
echo "labels agree on 100,000 lines: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
t0=$(date +%s%N)
"$bin" labels split "$out/big.jsonl" --held-out 0.3 --seed 1 > /dev/null 2>&1
echo "labels split on 100,000 lines: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
/usr/bin/time -f "labels agree peak RSS: %M KB" "$bin" labels agree "$out/big.jsonl" > /dev/null 2> "$out/time" || true
tail -1 "$out/time"

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  start_view "$out/kb.jsonl" kb; kb=$base
  PYTHONPATH=bench python3 - "$kb" "$out" <<'PY'
import json, statistics, sys, time
from webdriver import WebDriver
base, out = sys.argv[1], sys.argv[2]
with WebDriver(9628) as d:
    s = d.session("%s/prof-kb" % out)
    js = lambda src: d.js(s, src)
    def wait(src, want, limit=30):
        t0 = time.time()
        while js(src) != want:
            if time.time() - t0 > limit: raise SystemExit("timed out waiting for " + src)
            time.sleep(0.005)
    d.go(s, base + "/run?r=0%3Alabels_bench%2Fr1&outcome=failed&labels=unlabelled")
    wait("return document.body.getAttribute('data-ready')", "1")
    t_start = time.time()
    trials = 40
    for t in range(trials):
        title = js("var e=document.getElementById('trajtitle');return e?e.innerText:''")
        d.key(s, "n")
        wait("var e=document.getElementById('trajtitle');return !!document.getElementById('labtab') && (e?e.innerText:'') !== %s" % json.dumps(title), True)
        for i, k in enumerate("pfu"):
            d.key(s, k)
            wait("return document.getElementById('labels').getAttribute('data-saved')", str(t * 3 + i + 1))
    wall = time.time() - t_start
    ms = sorted(js("return window.__evalua_label_ms"))
    n = trials * 3
    print("keyboard labelling in Chromium: %d labels on %d failed trials in %.1f s (%.0f ms a label, n included; WebDriver's own round trips too)"
          % (n, trials, wall, wall * 1000 / n))
    print("  a label's round trip, key press to saved state drawn: median %.1f ms, p95 %.1f ms, max %.1f ms (n = %d)"
          % (statistics.median(ms), ms[int(len(ms) * 0.95)], ms[-1], len(ms)))
    d.close(s)
PY
fi
