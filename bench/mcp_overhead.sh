#!/usr/bin/env bash
# bench/mcp_overhead.sh: per-trial cost of command-agent trials whose tools are
# served over MCP (tools = "mcp"), against the same trials over JSON Lines.
#
# Each case of bench/mcp.lua runs alone, N trials, --jobs 1, release build:
#   sh_mcp - sh_protocol: the harness's cost of starting and stopping a trial's
#                         MCP server (the agent never connects);
#   py_mcp - py_protocol: a Python agent doing one lookup over MCP (initialize,
#                         notifications/initialized, tools/list, tools/call)
#                         against one tool_call line: client and server together.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
N=${N:-200}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t() {
  local s e
  s=$(date +%s.%N)
  target/release/evalua run bench/mcp.lua --case "$1" --trials "$N" --jobs "${JOBS:-1}" --out "$out/$1" -q >/dev/null
  e=$(date +%s.%N)
  grep -q '"outcome":"accepted"' "$out/$1/trials.jsonl" || { echo "$1: no accepted trial" >&2; exit 1; }
  if grep -q -v '"outcome":"accepted"' "$out/$1/trials.jsonl"; then echo "$1: a trial was not accepted" >&2; exit 1; fi
  echo "($e - $s) * 1000 / $N" | bc -l
}
for c in sh_protocol sh_mcp py_protocol py_mcp; do
  declare "ms_$c=$(t "$c")"
done
printf 'per trial (ms, N=%d, --jobs %s):\n' "$N" "${JOBS:-1}"
printf '  sh_protocol %.2f   sh_mcp %.2f   -> MCP server per trial: %+.2f ms\n' "$ms_sh_protocol" "$ms_sh_mcp" "$(echo "$ms_sh_mcp - $ms_sh_protocol" | bc -l)"
printf '  py_protocol %.2f   py_mcp %.2f   -> one MCP session + call: %+.2f ms\n' "$ms_py_protocol" "$ms_py_mcp" "$(echo "$ms_py_mcp - $ms_py_protocol" | bc -l)"
