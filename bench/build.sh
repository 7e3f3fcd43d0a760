#!/usr/bin/env bash
# bench/build.sh: the cold `cargo build --release` a newcomer pays (issue 28), and the binary it makes.
#
#   bench/build.sh [REV] [OUT]    REV: a git revision (default HEAD); OUT: where the build goes
#                                 (default /tmp/evalua-build-<rev>; removed first)
#
# Builds the sources of REV (`git archive`, so edits in the work tree do not leak in) into a
# fresh target dir with `--timings` (the HTML report lands in OUT/target/cargo-timings/) under
# /usr/bin/time -v, and prints: the machine's load before and after (`uptime`: on a shared
# machine the wall time depends on it, the CPU time much less), wall time, CPU time (user + sys,
# every process), the CPU of each crate's rustc (RUSTC_WRAPPER=bench/rustc_cpu.sh) and the
# C compiler's per package (CC=bench/cc_cpu.sh), and the release binary's size; then
# bench/build_replay.py replays the units on 2 idle cores (what the build would take on an
# idle 2-core machine: the figure to compare on a shared one). Crate sources must be
# downloaded already (cargo fetch): the figure is the build, not the network. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
rev=${1:-HEAD}
sha=$(git rev-parse --short "$rev")
out=${2:-/tmp/evalua-build-$sha}
rm -rf "$out"
mkdir -p "$out/src"
git archive "$rev" | tar -x -C "$out/src"
cd "$out/src"
cargo fetch -q
log=$out/build.log
rustc_log=$out/rustc-cpu.log
echo "revision: $sha ($(git -C "$repo" log -1 --format=%s "$rev" | cut -c1-80))"
echo "load before: $(uptime)"
echo "cores: $(nproc)"
# cargo's unit graph (which unit waits for which) for the replay; an unstable flag, hence
# RUSTC_BOOTSTRAP for this one command (it builds nothing).
RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$out/target cargo build --release --unit-graph -Z unstable-options >"$out/unit-graph.json"
# The real C compiler, resolved before CC names the wrapper (the wrapper refuses itself).
real_cc=$(command -v "${CC:-cc}")
CARGO_TARGET_DIR=$out/target RUSTC_WRAPPER=$repo/bench/rustc_cpu.sh EVALUA_REAL_CC=$real_cc \
  CC=$repo/bench/cc_cpu.sh EVALUA_RUSTC_LOG=$rustc_log \
  /usr/bin/time -v cargo build --release --timings >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
echo "load after:  $(uptime)"
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
user=$(sed -n 's/.*User time (seconds): //p' "$log")
sys=$(sed -n 's/.*System time (seconds): //p' "$log")
echo "wall: $wall   CPU: $(echo "$user + $sys" | bc) s (user $user, sys $sys)"
echo "units compiled: $(grep -c '^ *Compiling ' "$log")"
timings=$(ls -t "$out"/target/cargo-timings/cargo-timing-*.html | head -1)
echo "timings: $timings"
python3 - "$rustc_log" "$user" "$sys" <<'PY'
import collections, sys
cpu = collections.Counter()
cc = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8"):
    parts = line.split()  # user sys crate-name package crate-type ("cc" for the C compiler)
    if len(parts) == 5 and parts[2] != "-":
        try:
            s = float(parts[0]) + float(parts[1])
        except ValueError:
            continue
        if parts[2] == "cc" and parts[4] == "-":  # the C compiler, not the cc crate
            cc[parts[3] + " (C)"] += s
        else:
            cpu[parts[2]] += s
total = float(sys.argv[2]) + float(sys.argv[3])
rustc = sum(cpu.values())
print("CPU in rustc: %.0f s over %d crates; in the C compiler: %.0f s (%s); the rest (build scripts, cargo): %.0f s"
      % (rustc, len(cpu), sum(cc.values()), ", ".join("%s %.0f" % kv for kv in cc.most_common()), total - rustc - sum(cc.values())))
print("most CPU (s):")
for name, s in cpu.most_common(20):
    print("  %7.1f  %s" % (s, name))
PY
python3 "$repo/bench/build_replay.py" "$timings" "$rustc_log" "$out/unit-graph.json" 2
bin=$out/target/release/evalua
echo "binary: $(stat -c %s "$bin" | awk '{printf "%.1f MB (%d bytes)", $1/1048576, $1}'), $(file -b "$bin" | grep -o 'not stripped\|stripped' || echo '?')"
