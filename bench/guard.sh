#!/usr/bin/env bash
# bench/guard.sh [EVALUA_BIN]: the speed guard .ci/run runs after the tests.
#
# Counts the instructions a unit of work costs (valgrind's callgrind: the count
# does not depend on the machine's load, so a busy CI box measures the same as an
# idle one) on three workloads, and fails when one rose more than its tolerance
# over the budget committed in bench/budgets.json:
#
#   plain    bench/plain.lua, a scripted agent that answers, one answer check
#   agent    bench/agent.lua, lookup + update through the executor, check.tools
#   taubench `evalua grade suites/taubench/airline.lua` on τ-bench trajectories
#            (../shared/taubench's sample, repeated), every call re-executed
#
# Each workload runs twice, small and large; the cost of a unit is the
# difference of the two counts over the difference of their units, so the
# start-up (loading, planning, writing reports) cancels out and what is left is
# the cost of a trial (or a graded trajectory).
#
# The budgets are for the build CI has (the debug profile, whose dependencies are
# optimised: Cargo.toml's [profile.dev.package."*"]). A deliberate rise updates
# bench/budgets.json in the same commit, with the reason in its "why".
#
#   BIN=... or $1     the binary (default target/debug/evalua)
#   GUARD_WRITE=1     write the measured figures into bench/budgets.json instead
#   GUARD_ONLY=name   one workload
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${BIN:-target/debug/evalua}}
TAUBENCH=${TAUBENCH:-../shared/taubench}
budgets=bench/budgets.json
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
command -v valgrind >/dev/null || { echo "bench/guard.sh: valgrind is not installed" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench/guard.sh: no evalua binary at $bin" >&2; exit 2; }

# count NAME ARGS...: instructions of one run of evalua under callgrind.
count() {
  local name=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" "$bin" "$@" -q --jobs 1 --out "$out/$name.run" \
    >/dev/null 2>"$out/$name.log" || true
  local n
  n=$(grep -o 'Collected : [0-9]*' "$out/$name.log" | grep -o '[0-9]*$' || true)
  [ -n "$n" ] || { echo "bench/guard.sh: $name did not run under callgrind:" >&2; tail -5 "$out/$name.log" >&2; exit 2; }
  [ -s "$out/$name.run/trials.jsonl" ] || { echo "bench/guard.sh: $name wrote no trials" >&2; tail -5 "$out/$name.log" >&2; exit 2; }
  echo "$n $(wc -l <"$out/$name.run/trials.jsonl")"
}

# per_unit NAME SMALL_ARGS -- LARGE_ARGS: instructions per unit, start-up cancelled.
per_unit() {
  local name=$1 small=() large=()
  shift
  while [ "$1" != "--" ]; do small+=("$1"); shift; done
  shift
  large=("$@")
  read -r i1 u1 < <(count "$name-small" "${small[@]}")
  read -r i2 u2 < <(count "$name-large" "${large[@]}")
  [ "$u2" -gt "$u1" ] || { echo "bench/guard.sh: $name: the large run has no more units ($u2) than the small ($u1)" >&2; exit 2; }
  echo $(((i2 - i1) / (u2 - u1)))
}

# τ-bench's published sample trajectories (4), repeated K times under new trial numbers.
trajectories() {
  python3 - "$TAUBENCH/airline/sample_trajectories.json" "$1" "$2" <<'PY'
import json, sys
sample, k, path = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
json.dump([dict(e, trial=e["trial"] + 100 * r) for r in range(k) for e in sample], open(path, "w"))
PY
}

declare -A measured
run_workload() {
  case $1 in
    plain | agent) measured[$1]=$(per_unit "$1" run "bench/$1.lua" --trials 1 -- run "bench/$1.lua" --trials 4) ;;
    taubench)
      [ -f "$TAUBENCH/airline/sample_trajectories.json" ] || { echo "bench/guard.sh: no $TAUBENCH/airline/sample_trajectories.json" >&2; exit 2; }
      trajectories 1 "$out/tb1.json"
      trajectories 4 "$out/tb4.json"
      measured[taubench]=$(per_unit taubench grade suites/taubench/airline.lua --traces "$out/tb1.json" -- \
        grade suites/taubench/airline.lua --traces "$out/tb4.json") ;;
  esac
}

# 40 cases: 40 trials against 160 (a trial that evaluated the whole suite again would cost 40 cases more).
export EVALUA_BENCH_CASES=40
workloads=(plain agent taubench)
[ -z "${GUARD_ONLY:-}" ] || workloads=("$GUARD_ONLY")
for w in "${workloads[@]}"; do run_workload "$w"; done

python3 - "$budgets" "${GUARD_WRITE:-0}" <<PY
import json, sys
path, write = sys.argv[1], sys.argv[2] == "1"
measured = {$(for w in "${workloads[@]}"; do printf '"%s": %s, ' "$w" "${measured[$w]}"; done)}
doc = json.load(open(path))
failed = []
for name, got in measured.items():
    entry = doc["workloads"][name]
    budget, tol = entry["instructions_per_unit"], doc["tolerance"]
    ratio = got / budget
    verdict = "ok"
    if write:
        verdict = "written"
    elif ratio > 1 + tol:
        verdict = f"ROSE {100 * (ratio - 1):.1f}% (more than {100 * tol:.0f}%)"
        failed.append(name)
    elif ratio < 1 - tol:
        verdict = f"fell {100 * (1 - ratio):.1f}%: lower the budget (GUARD_WRITE=1) in the commit that made it faster"
    print(f"{name:9} {got / 1e6:8.2f} M instructions/{entry['unit']:10} budget {budget / 1e6:8.2f} M  {verdict}")
    if write:
        entry["instructions_per_unit"] = got
if write:
    json.dump(doc, open(path, "w"), indent=2)
    open(path, "a").write("\n")
    print(f"wrote {path}: say why in its 'why' and in the commit message")
elif failed:
    print(f"speed guard: {', '.join(failed)} rose over budget; if the rise is deliberate, update bench/budgets.json "
          f"(GUARD_WRITE=1 bash bench/guard.sh) with the reason in the same commit", file=sys.stderr)
    sys.exit(1)
PY
