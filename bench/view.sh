#!/usr/bin/env bash
# bench/view.sh: `evalua view` on 100,000-trial run dirs.
#
# Two synthetic run dirs of 100,000 trials each (bench/make_run.py: real
# shapes, 6 checks per record with evidence, 3 tool calls per trace, ~30% not
# accepted), "wide" (20,000 cases x 5 trials) and "deep" (100 cases x 1,000),
# plus a hard-linked copy of each to compare against. The viewer is started
# on them; each request is timed with curl (time to the last byte), first
# cold (the run is read for the first time) then warm. The server's peak RSS
# comes from /proc/PID/status (VmHWM). Last, headless Chromium opens a run
# page and reports when its script has drawn the first page of trials
# (body[data-ready-ms]).
#
# Release build (RELEASE=0: the debug build). Figures go to stdout;
# docs/benchmarks.md quotes them. Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RELEASE:-1}" = 1 ]; then cargo build --release -q; bin=target/release/evalua; else cargo build -q; bin=target/debug/evalua; fi
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT

gen() { # name cases trials
  local t0=$(date +%s%N)
  python3 bench/make_run.py "$out/runs/bench/$1" "$2" "$3"
  cp -al "$out/runs/bench/$1" "$out/runs/bench/$1-copy"
  printf 'generated %-5s %6d cases x %4d trials: trials.jsonl %s, traces/ %s (%d s)\n' "$1" "$2" "$3" \
    "$(du -h "$out/runs/bench/$1/trials.jsonl" | cut -f1)" "$(du -sh "$out/runs/bench/$1/traces" | cut -f1)" \
    $(( ($(date +%s%N) - t0) / 1000000000 ))
}
gen wide 20000 5
gen deep 100 1000

"$bin" view "$out/runs" --port 0 > "$out/view.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'http://' "$out/view.out" 2>/dev/null && break; sleep 0.1; done
base=$(grep -o 'http://127.0.0.1:[0-9]*' "$out/view.out")
echo "viewer: $base (pid $pid), RSS at start $(grep VmRSS /proc/$pid/status | awk '{print $2/1024 " MB"}')"

t() { # label path
  local r
  r=$(curl -s -o "$out/body" -w '%{http_code} %{time_total} %{size_download}' "$base$2")
  set -- "$1" $r
  printf '%-58s %s %7.0f ms %9d bytes\n' "$1" "$2" "$(echo "$3 * 1000" | bc -l)" "$4"
}
for name in wide deep; do
  r="0%3Abench%2F$name"
  echo "== $name"
  t "run page, cold (reads all 100,000 records)" "/run?r=$r"
  t "run page, warm" "/run?r=$r"
  t "trials, page 1 of 50, no filter" "/api/trials?r=$r"
  t "trials, last page" "/api/trials?r=$r&page=1999"
  t "trials, failed check 'args issue_refund'" "/api/trials?r=$r&check=args%20issue_refund"
  t "trials, outcome critical + tag refund" "/api/trials?r=$r&outcome=critical&tag=refund"
  t "trials, failure mode tool_loop, case glob *_0001*" "/api/trials?r=$r&mode=tool_loop&case=*_0001*"
  t "cases x trials grid, page 1" "/api/grid?r=$r"
  t "grid, failed check 'tools in order'" "/api/grid?r=$r&check=tools%20in%20order"
  t "one trial (record + trace)" "/api/trial?r=$r&case=case_00042_billing&trial=3"
  t "compare with its copy, cold (reads the copy)" "/compare?a=$r&b=$r-copy"
  t "compare with its copy, warm" "/compare?a=$r&b=$r-copy"
done
t "run list (4 runs, no summary.json: figures from the records)" "/api/runs"
echo "viewer peak RSS: $(grep VmHWM /proc/$pid/status | awk '{print $2/1024 " MB"}')"

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  # WebDriver, as tests/browser.rs: load each run page three times, read when its script was done.
  PYTHONPATH=bench python3 - "$base" "$out" <<'PY'
import sys, time
from webdriver import WebDriver
base, out = sys.argv[1], sys.argv[2]
with WebDriver(9627) as d:
    for name in ["wide", "deep"]:
        for i in range(3):
            s = d.session("%s/prof-%s-%d" % (out, name, i))
            t0 = time.time()
            d.go(s, "%s/run?r=0%%3Abench%%2F%s" % (base, name))
            while True:
                r = d.js(s, "return [document.body.getAttribute('data-ready-ms'), document.querySelectorAll('#trials tr.t').length, document.documentElement.outerHTML.length]")
                if r[0] or time.time() - t0 > 60: break
                time.sleep(0.05)
            print("chromium, %s run page, load %d: ready %s ms after navigation start, %d trial rows drawn, DOM %d KB"
                  % (name, i + 1, r[0], r[1], r[2] // 1024))
            d.close(s)
PY
fi
