#!/usr/bin/env bash
# bench/perturb.sh: what running a perturbation beside the baseline in one
# run of perturbations (`evalua run SUITE --perturb NAME`, SPEC §17) costs,
# against running the two conditions as separate runs.
#
# Suite: suites/refunds_robustness.lua (3 cases, its scripted refunds bot),
# TRIALS (default 200) trials a case: the baseline and refund_429 (a 429 on
# the first refund of each trial) either way, 2 x 3 x TRIALS trials. The
# separate runs are the suite without --perturb (the baseline) and a copy of
# it whose suite-wide `faults` is refund_429's rule. For each of ROUNDS
# rounds (default 3), in alternating order, each way's wall time and CPU
# (user + system); prints the medians and the difference per trial.
# BIN=path/to/evalua measures another build (default: the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
ROUNDS=${ROUNDS:-3}
TRIALS=${TRIALS:-200}
JOBS=${JOBS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The copies live beside the suite's modules, fixtures and agent.
for d in shared fixtures agents; do ln -s "$PWD/suites/$d" "$out/$d"; done
cp suites/refunds_robustness.lua "$out/robust.lua"
python3 - "$out" <<'PY'
import re, sys
d = sys.argv[1]
s = open(d + "/robust.lua").read()
s = re.sub(r"\n  gate    = .*", "", s)
open(d + "/robust.lua", "w").write(s)
f = re.sub(r"\n  perturb = \{.*?\n  \},", "\n  faults  = { issue_refund = { kind = \"rate_limit\", on_call = 1 } },", s, flags=re.S)
open(d + "/faulted.lua", "w").write(f)
PY
cpu() { # wall and CPU seconds of a command, as "wall cpu"
  /usr/bin/time -o "$out/time" -f "%e %U %S" "$@" >/dev/null 2>&1 || true
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$out/time"
}
together() { cpu "$BIN" run "$out/robust.lua" --perturb refund_429 --trials "$TRIALS" --jobs "$JOBS" -q --seed 3 --out "$out/p$1"; }
separate() {
  local a b; a=$(cpu "$BIN" run "$out/robust.lua" --trials "$TRIALS" --jobs "$JOBS" -q --seed 3 --out "$out/b$1")
  b=$(cpu "$BIN" run "$out/faulted.lua" --trials "$TRIALS" --jobs "$JOBS" -q --seed 3 --out "$out/f$1")
  echo "$a $b" | awk '{printf "%.2f %.2f\n", $1 + $3, $2 + $4}'
}
tw=(); tc=(); sw=(); sc=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then t=$(together "$r"); s=$(separate "$r"); else s=$(separate "$r"); t=$(together "$r"); fi
  read -r a b <<<"$t"; tw+=("$a"); tc+=("$b")
  read -r a b <<<"$s"; sw+=("$a"); sc+=("$b")
  echo "round $r: one run of perturbations $t (wall s, cpu s); two runs $s"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
n=$((2 * 3 * TRIALS))
printf 'median: one run %s s wall, %s s cpu; two runs %s s wall, %s s cpu (%d trials, --jobs %s)\n' \
  "$(median "${tw[@]}")" "$(median "${tc[@]}")" "$(median "${sw[@]}")" "$(median "${sc[@]}")" "$n" "$JOBS"
"$BIN" report "$out/p1" >/dev/null 2>&1 || true
printf 'of which the side-by-side reports (evalua report on the run dir): %s (wall s, cpu s)\n' \
  "$(cpu "$BIN" report "$out/p1")"
uptime
