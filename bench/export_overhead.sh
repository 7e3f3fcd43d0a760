#!/usr/bin/env bash
# bench/export_overhead.sh: what `--otlp` costs a run (release build).
#
#   suite:    bench/throughput.lua, 100 cases × 50 trials = 5,000 trials, --jobs 2
#   plain     no export
#   dead      --otlp http://127.0.0.1:<a port nobody listens on>
#   phoenix   --otlp to a live Arize Phoenix on 127.0.0.1 (only if EVALUA_PHOENIX_BIN is set;
#             started here with a temp working dir, as the tests start it)
#   file      --otlp-file on the run dir's disk
#
# The configurations are interleaved, RUNS rounds (default 3), to spread the
# machine's noise over all of them. Prints wall time, trials/s, CPU time
# (user + sys: what evalua itself spent, less swayed by other load than wall
# time) and peak RSS per run, then the medians per configuration. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/evalua
out=$(mktemp -d)
runs=${RUNS:-3}
phoenix_pid=""
cleanup() {
  [ -n "$phoenix_pid" ] && kill -TERM -- "-$phoenix_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dead_port=$(free_port)

configs="plain dead file"
if [ -n "${EVALUA_PHOENIX_BIN:-}" ] && [ -x "$EVALUA_PHOENIX_BIN" ]; then
  port=$(free_port)
  mkdir -p "$out/phoenix"
  PHOENIX_WORKING_DIR="$out/phoenix" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$port PHOENIX_GRPC_PORT=0 \
    PHOENIX_ALLOW_EXTERNAL_RESOURCES=false PHOENIX_TELEMETRY_ENABLED=false PHOENIX_LOG_MIGRATIONS=false \
    setsid "$EVALUA_PHOENIX_BIN" serve >"$out/phoenix.log" 2>&1 &
  phoenix_pid=$!
  for _ in $(seq 600); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null || { echo "phoenix did not start"; exit 1; }
  configs="$configs phoenix"
else
  echo "(EVALUA_PHOENIX_BIN unset: no live-Phoenix figures)"
fi

run() { # config round
  local flags=()
  case $1 in
    dead) flags=(--otlp "http://127.0.0.1:$dead_port") ;;
    phoenix) flags=(--otlp "http://127.0.0.1:$port") ;;
    file) flags=(--otlp-file "$out/$1-$2.otlp.jsonl") ;;
  esac
  /usr/bin/time -f "%e %M %U %S" -o "$out/t" "$bin" run bench/throughput.lua --trials 50 --jobs 2 -q \
    --out "$out/$1-$2" "${flags[@]}" >"$out/$1-$2.stdout" || true
  read -r secs kb usr sys < <(tail -1 "$out/t")
  local tps; tps=$(echo "5000 / $secs" | bc -l)
  local cpu; cpu=$(echo "$usr + $sys" | bc -l)
  printf '%-8s round %d  %6.2f s  %7.0f trials/s  CPU %6.2f s  peak RSS %5.1f MB  %s\n' "$1" "$2" "$secs" "$tps" \
    "$cpu" "$(echo "$kb / 1024" | bc -l)" "$(grep -E 'export|exported' "$out/$1-$2.stdout" | head -1 | cut -c1-90)"
  echo "$1 $tps $cpu" >> "$out/all"
  rm -rf "$out/$1-$2"
}

"$bin" run bench/throughput.lua --trials 5 --jobs 2 -q --out "$out/warmup" >/dev/null || true
for r in $(seq "$runs"); do
  for c in $configs; do run "$c" "$r"; done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "medians:          trials/s   CPU s   CPU ms/trial"
for c in $configs; do
  cpu=$(grep "^$c " "$out/all" | awk '{print $3}' | median)
  printf '  %-8s %14.0f %7.2f %8.3f\n' "$c" "$(grep "^$c " "$out/all" | awk '{print $2}' | median)" "$cpu" \
    "$(echo "$cpu * 1000 / 5000" | bc -l)"
done
