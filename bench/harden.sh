#!/usr/bin/env bash
# bench/harden.sh: what `evalua harden` costs (SPEC §19): every applicable
# adversary, one trial each per case, on suites/refunds.lua (3 cases) and on
# τ-bench's airline domain (suites/taubench/airline.lua, 50 cases), beside a
# run of the same cases with their own agent, one trial each (`evalua run
# --trials 1`; airline's gold agent), for scale. For each of ROUNDS rounds
# (default 3), each command's wall time and CPU (user + system); prints the
# medians and the trials harden played.
# BIN=path/to/evalua measures another build (default: the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu() { # wall and CPU seconds of a command, as "wall cpu"
  /usr/bin/time -o "$out/time" -f "%e %U %S" "$@" >/dev/null 2>&1 || true
  tail -n 1 "$out/time" | awk '{printf "%s %.2f\n", $1, $2 + $3}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for suite in suites/refunds.lua suites/taubench/airline.lua; do
  : >"$out/h"; : >"$out/r"
  for i in $(seq "$ROUNDS"); do
    cpu "$BIN" harden "$suite" --jobs "$JOBS" >>"$out/h"
    cpu "$BIN" run "$suite" --trials 1 --jobs "$JOBS" -q --out "$out/run-$(basename "$suite" .lua)-$i" >>"$out/r"
  done
  trials=$("$BIN" harden "$suite" --jobs "$JOBS" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["trials"])')
  printf '%s: harden %s trials: wall %s s, CPU %s s; run --trials 1: wall %s s, CPU %s s\n' "$suite" "$trials" \
    "$(cut -d' ' -f1 "$out/h" | median)" "$(cut -d' ' -f2 "$out/h" | median)" \
    "$(cut -d' ' -f1 "$out/r" | median)" "$(cut -d' ' -f2 "$out/r" | median)"
done
