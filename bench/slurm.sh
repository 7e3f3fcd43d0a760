#!/usr/bin/env bash
# bench/slurm.sh: the wall time of a 3-part Slurm run against one `evalua run`
# process, on the same machine (release build).
#
# The Slurm side is what deploy/slurm/submit.sh does: an array of 3 tasks, each
# `evalua run --partition auto`, and a merge job after them (afterany); the time
# runs from submitting until the merged summary.json exists. Tasks ask for one
# CPU each, so on a 2-core node two run at once. Every process uses --jobs 2.
#
#   bench/slurm.sh        needs a Slurm cluster: SLURM_CONF (.ci/services.sh: ci_munge_start; ci_slurm_start)
#
# Workloads: suites/refunds.lua at --trials 300 (900 scripted trials: CPU-bound,
# milliseconds each), and bench/waiting.lua (100 trials that each wait 0.5 s,
# as a model-driven agent waits on its API). Figures go to stdout;
# docs/benchmarks.md quotes them. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SLURM_CONF:?no Slurm cluster: set SLURM_CONF (see .ci/README.md)}"
rounds=${ROUNDS:-3}
[ -n "${NO_BUILD:-}" ] || cargo build --release -q
bin=$PWD/target/release/evalua
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The project as on a shared filesystem: the suites, graders and the job scripts.
cp -r suites graders bench "$work/"
mkdir -p "$work/deploy" "$work/logs"
cp -r deploy/slurm "$work/deploy/slurm"
cd "$work"

now() { date +%s.%N; }

one() { # label jobs suite args...
  local label=$1 jobs=$2 suite=$3 t0 t1
  shift 3
  t0=$(now)
  "$bin" run "$suite" --jobs "$jobs" -q --out "one-$label-$RANDOM" "$@" >/dev/null || true
  t1=$(now)
  printf '%-18s one process, --jobs %d      %6.2f s\n' "$label" "$jobs" "$(echo "$t1 - $t0" | bc -l)"
}

slurm() { # label suite run-args
  local label=$1 suite=$2 args=$3 t0 t1 ids array merged
  t0=$(now)
  ids=$(WORKDIR=$work EVALUA=$bin SUITE=$suite JOBS=2 EVALUA_RUN_ARGS=$args \
    SBATCH_ARGS="--cpus-per-task=1 --mem=256M" "$work/deploy/slurm/submit.sh" 3)
  array=$(sed -n 's/^array job \([0-9]*\).*/\1/p' <<<"$ids")
  merged="$work/parts/$array.merged/summary.json"
  while [ ! -f "$merged" ]; do
    if [ -n "$(grep -s 'not merged' "$work"/logs/evalua-merge-*.err)" ]; then
      echo "merge failed:"; cat "$work"/logs/*; exit 1
    fi
    sleep 0.05
  done
  t1=$(now)
  printf '%-18s Slurm: 3 parts + merge   %6.2f s\n' "$label" "$(echo "$t1 - $t0" | bc -l)"
}

for _ in $(seq "$rounds"); do
  one refunds-900 2 suites/refunds.lua --trials 300
  slurm refunds-900 suites/refunds.lua "--trials 300"
  one waiting-100 2 bench/waiting.lua
  slurm waiting-100 bench/waiting.lua ""
  one waiting-100 4 bench/waiting.lua
done
