#!/usr/bin/env bash
# deploy/slurm/submit.sh: submit an evalua array job and its dependent merge job.
#
#   deploy/slurm/submit.sh [N]            N parts (default 3), from the shared folder WORKDIR
#
# Environment: WORKDIR (default: the current folder; it must be on the shared
# filesystem), SUITE, SEED, EVALUA, EVALUA_RUN_ARGS (passed to every task),
# SBATCH_ARGS (more sbatch flags for both jobs, e.g. "--partition=cpu --account=x").
# Prints the two job ids and where the parts and the merged run will be.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=${1:-3}
SBATCH_ARGS=${SBATCH_ARGS:-}
WORKDIR=$(cd "${WORKDIR:-.}" && pwd)
mkdir -p "$WORKDIR/logs"

# shellcheck disable=SC2086  # SBATCH_ARGS is a list of flags
array=$(sbatch --parsable --chdir="$WORKDIR" --array="1-$n" --export=ALL $SBATCH_ARGS "$here/evalua-array.sbatch")
array=${array%%;*}   # "jobid;cluster" on federated setups
parts="parts/$array"

# shellcheck disable=SC2086
merge=$(sbatch --parsable --chdir="$WORKDIR" --dependency="afterany:$array" --kill-on-invalid-dep=yes \
  --export="ALL,PARTS=$parts,MERGED=$parts.merged" $SBATCH_ARGS "$here/merge.sbatch")
merge=${merge%%;*}

cat <<EOF
array job $array ($n tasks): parts in $WORKDIR/$parts/<task id>, logs in $WORKDIR/logs/evalua-${array}_<task id>.{out,err}
merge job $merge (after every task ends): $WORKDIR/$parts.merged, log $WORKDIR/logs/evalua-merge-$merge.{out,err}
  squeue -j $array,$merge     sacct -j $array,$merge --format=JobID,State,ExitCode
EOF
