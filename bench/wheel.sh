#!/usr/bin/env bash
# bench/wheel.sh: `pip install` of evalua's wheel into a fresh venv (issue 28).
#
#   bench/wheel.sh [SRC]      SRC: the source tree to build the wheel from (default this repository);
#                             CARGO_TARGET_DIR is passed on, so a tree bench/build.sh has just built
#                             (SRC=OUT/src, CARGO_TARGET_DIR=OUT/target) packs without compiling again.
#
# maturin (EVALUA_MATURIN, default /opt/evalua-ci/maturin-venv/bin/maturin) builds the wheel
# (pyproject.toml: bindings = "bin") with cargo's PROFILE (default release; PROFILE=dev packs the
# debug build as CI does, a larger binary); then, ROUNDS times (default 3), a fresh venv
# (python3 -m venv), `pip install` of the wheel file (no index: nothing downloaded), and the
# `evalua --version` pip put on PATH. Prints the wheel's size and each step's wall time.
# Not a test; on a shared machine say the load (printed).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-$PWD}
maturin=${EVALUA_MATURIN:-/opt/evalua-ci/maturin-venv/bin/maturin}
py=${EVALUA_CI_PYTHON:-python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "load before: $(uptime)"
t0=$(date +%s.%N)
(cd "$src" && "$maturin" build --profile "${PROFILE:-release}" --out "$dir/dist" >"$dir/maturin.log" 2>&1) || { tail -20 "$dir/maturin.log"; exit 1; }
t1=$(date +%s.%N)
whl=$(ls "$dir"/dist/evalua-*.whl)
printf "maturin build --profile ${PROFILE:-release}: %.1f s (cargo had %s)\n" "$(echo "$t1 - $t0" | bc)" \
  "$(grep -q 'Compiling evalua' "$dir/maturin.log" && echo 'to compile evalua' || echo 'nothing to compile')"
echo "wheel: $(basename "$whl"), $(stat -c %s "$whl" | awk '{printf "%.1f MB", $1/1048576}')"
for i in $(seq "${ROUNDS:-3}"); do
  rm -rf "$dir/venv"
  a=$(date +%s.%N)
  "$py" -m venv "$dir/venv"
  b=$(date +%s.%N)
  "$dir/venv/bin/pip" install --disable-pip-version-check --no-index -q "$whl"
  c=$(date +%s.%N)
  v=$(PATH="$dir/venv/bin:$PATH" evalua --version)
  d=$(date +%s.%N)
  printf 'round %d: venv %.2f s, pip install %.2f s, %s %.3f s (%s)\n' "$i" "$(echo "$b - $a" | bc)" \
    "$(echo "$c - $b" | bc)" "$v" "$(echo "$d - $c" | bc)" "$(PATH="$dir/venv/bin:$PATH" command -v evalua)"
done
echo "load after:  $(uptime)"
