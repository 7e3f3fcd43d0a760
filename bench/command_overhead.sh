#!/usr/bin/env bash
# bench/command_overhead.sh: harness overhead per command-agent trial.
#
# Overhead = (time of `evalua run` for N trials of a trivial protocol agent
#             - time of N bare spawns of the same program fed the same line) / N,
# with --jobs 1; then the same run with --jobs 2 to show scaling to both cores;
# then --jobs 1 again with --isolation none: the difference is the process
# sandbox's cost per trial (bubblewrap's namespaces and mounts).
# BIN=path/to/evalua measures another build (default: the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
N=${N:-500}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
agent='read -r line; printf '"'"'{"type":"final","content":"ok"}\n'"'"

bare=$(python3 - "$N" "$agent" <<'PY'
import subprocess, sys, time
n, agent = int(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
for _ in range(n):
    subprocess.run(["/bin/sh", "-c", agent], input=b'{"type":"start"}\n', stdout=subprocess.DEVNULL, check=True)
print(time.perf_counter() - t)
PY
)
t() { local s; s=$(date +%s.%N); "$BIN" run bench/command.lua --trials "$N" --jobs "$1" --out "${OUT_ROOT:-$out}/j$1$2" -q "${@:3}" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc -l; }
j1=$(t 1 "")
j2=$(t 2 "")
none=$(t 1 -none --isolation none)
printf 'bare spawns: %d in %.2f s (%.2f ms each)\n' "$N" "$bare" "$(echo "$bare * 1000 / $N" | bc -l)"
printf 'evalua --jobs 1: %.2f s  -> overhead %.2f ms per trial\n' "$j1" "$(echo "($j1 - $bare) * 1000 / $N" | bc -l)"
printf 'evalua --jobs 2: %.2f s  (%.2fx the --jobs 1 throughput)\n' "$j2" "$(echo "$j1 / $j2" | bc -l)"
printf 'evalua --jobs 1 --isolation none: %.2f s  -> the sandbox costs %.2f ms per trial\n' "$none" "$(echo "($j1 - $none) * 1000 / $N" | bc -l)"
