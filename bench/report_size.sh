#!/usr/bin/env bash
# bench/report_size.sh: size and load time of report.html for a 500-case ×
# 5-trial run (bench/report.lua: a scripted agent failing ~27% of trials, with
# real traces), plus the time `evalua report` takes to re-render the three reports.
#
# Load time: headless Chromium opens the file and the page records, once its
# script has drawn the grid, performance.now() (ms since navigation start) in
# body[data-ready-ms]; --dump-dom prints it. Three loads, fresh profile each.
#
# Uses the debug build (warm in CI); RELEASE=1 builds and uses --release.
# Figures go to stdout; README.md quotes them. Not a test: nothing here fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RELEASE:-0}" = 1 ]; then cargo build --release -q; bin=target/release/evalua; else cargo build -q; bin=target/debug/evalua; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" run bench/report.lua --out "$out/run" -q --jobs 2 >/dev/null || true
trials=$(wc -l < "$out/run/trials.jsonl")
failing=$(grep -vc '"outcome":"accepted"' "$out/run/trials.jsonl" || true)
printf 'run: %d trials, %d not accepted, traces/ %s\n' "$trials" "$failing" "$(du -sh "$out/run/traces" | cut -f1)"
/usr/bin/time -f "%e" -o "$out/report.time" "$bin" report "$out/run" >/dev/null || true
printf 'evalua report (%s build): %s s for report.md + junit.xml + report.html\n' "$(basename "$(dirname "$bin")")" "$(tail -1 "$out/report.time")"
for f in report.html report.md junit.xml; do
  printf '%-12s %8.1f KB\n' "$f" "$(echo "$(stat -c %s "$out/run/$f") / 1024" | bc -l)"
done
for i in 1 2 3; do
  start=$(date +%s%N)
  dom=$(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$out/profile$i" --dump-dom "file://$out/run/report.html" 2>/dev/null)
  end=$(date +%s%N)
  ready=$(grep -o 'data-ready-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*')
  printf 'chromium load %d: page ready %s ms after navigation start (whole browser process %d ms)\n' "$i" "${ready:-?}" $(( (end - start) / 1000000 ))
done
