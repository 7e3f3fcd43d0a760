#!/usr/bin/env bash
# bench/evalua_mcp.sh: `evalua mcp`'s round trip for a 15-trial run (issue 28), against the same
# run started directly (`evalua run --json`).
#
#   bench/evalua_mcp.sh            ROUNDS=5 by default; EVALUA_BIN=path skips the release build
#
# A client of the official MCP Python SDK (the venv of EVALUA_SDK_PYTHON, as tests/mcp_server.rs
# uses) starts `evalua mcp` in a copy of suites/ and graders/, times the session's start
# (spawn, initialize, tools/list), then, in alternating rounds, `run_suite` on suites/refunds.lua
# (3 cases × 5 trials, progress notifications on) and the same run as `evalua run --json` in a
# child process. Prints each round and the medians: the difference is what MCP adds to a run
# (the server runs the same command as a child, so: one more process, the progress lines, the
# JSON-RPC answer). Not a test; on a shared machine say the load (printed before and after).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
if [ -z "${EVALUA_BIN:-}" ]; then
  cargo build --release -q
  EVALUA_BIN=$repo/target/release/evalua
fi
PY=${EVALUA_SDK_PYTHON:?set EVALUA_SDK_PYTHON to a python with the official MCP SDK (source /work/ci-env.sh or .ci/services.sh)}
project=$(mktemp -d)
trap 'rm -rf "$project"' EXIT
cp -a suites graders "$project"/
: >"$project/evalua.toml"
echo "load before: $(uptime)"
echo "binary: $EVALUA_BIN ($("$EVALUA_BIN" --version))"
"$PY" bench/evalua_mcp.py "$EVALUA_BIN" "$project" "${ROUNDS:-5}"
echo "load after:  $(uptime)"
