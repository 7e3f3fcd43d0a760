#!/usr/bin/env bash
# Checks every service the way the tests will use it, and prints what it measured.
#
#   bash .ci/smoke.sh              install, start, check, stop (by hand; as root)
#   bash .ci/smoke.sh --started    only the checks, in an environment .ci/services.sh set up
#
# Not run by .ci/run (the tests are the checks there); kept so the facts in .ci/README.md can
# be re-checked on a new machine in one command.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=services.sh
source "$here/services.sh"

if [ "${1:-}" != --started ]; then
  trap 'rc=$?; trap - EXIT; ci_stop_all; ci_print_timings; exit $rc' EXIT
  ci_install_all
  ci_start_all
fi

fail() { echo "SMOKE FAIL: $*" >&2; exit 1; }
scratch=$(mktemp -d /tmp/evalua-smoke.XXXXXX)
chmod 755 "$scratch"

check_sdk() {
  "$EVALUA_SDK_PYTHON" - <<'EOF' || return 1
import openai, anthropic, mcp, opentelemetry.sdk, importlib.metadata as m
print("sdk venv:", ", ".join(f"{p} {m.version(p)}" for p in
      ["openai", "anthropic", "mcp", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"]))
EOF
  # An MCP stdio round trip with the 2.x API (FastMCP is MCPServer there; fields are snake_case).
  cat >"$scratch/mcp_server.py" <<'EOF'
from mcp.server.mcpserver import MCPServer
server = MCPServer("ci-check")
@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
server.run()
EOF
  cat >"$scratch/mcp_client.py" <<'EOF'
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            init = await s.initialize()
            res = await s.call_tool("add", {"a": 2, "b": 3})
            assert res.structured_content == {"result": 5}, res
            print("mcp stdio round trip: protocol", init.protocol_version, "add(2,3) =", res.content[0].text)
asyncio.run(main())
EOF
  timeout 60 "$EVALUA_SDK_PYTHON" "$scratch/mcp_client.py" "$scratch/mcp_server.py"
}

check_pg() {
  local t0 t1
  t0=$(date +%s%N)
  psql "$EVALUA_PG_URL" -qAt -v ON_ERROR_STOP=1 -c 'create database smoke_tmpl' || return 1
  psql "${EVALUA_PG_URL%/*}/smoke_tmpl" -qAt -v ON_ERROR_STOP=1 \
    -c 'create table orders(id int primary key, total numeric); insert into orders values (1, 9.5)' || return 1
  psql "$EVALUA_PG_URL" -qAt -v ON_ERROR_STOP=1 -c 'create database smoke_trial template smoke_tmpl' || return 1
  [ "$(psql "${EVALUA_PG_URL%/*}/smoke_trial" -qAtc 'select total from orders where id = 1')" = 9.5 ] || return 1
  psql "$EVALUA_PG_URL" -qAt -c 'drop database smoke_trial' -c 'drop database smoke_tmpl' || return 1
  t1=$(date +%s%N)
  echo "postgres: template database + CREATE DATABASE ... TEMPLATE + drop: $(((t1 - t0) / 1000000)) ms"
}

check_slurm() {
  local d="$scratch/slurm-job" t0 t1 i out
  mkdir -p "$d"
  cat >"$d/task.sh" <<'EOF'
#!/bin/sh
echo "task=$SLURM_ARRAY_TASK_ID count=$SLURM_ARRAY_TASK_COUNT min=$SLURM_ARRAY_TASK_MIN max=$SLURM_ARRAY_TASK_MAX pwd=$(pwd) marker=$SMOKE_MARKER"
echo "$SLURM_ARRAY_TASK_ID" > "part-$SLURM_ARRAY_TASK_ID.txt"
EOF
  chmod +x "$d/task.sh"
  t0=$(date +%s%N)
  (cd / && SMOKE_MARKER=exported sbatch --quiet --wait --array=1-3 --chdir="$d" \
    --output="$d/out-%a.txt" "$d/task.sh") || return 1
  t1=$(date +%s%N)
  for i in 1 2 3; do
    out=$(cat "$d/out-$i.txt") || return 1
    [ "$out" = "task=$i count=3 min=1 max=3 pwd=$d marker=exported" ] || { echo "unexpected: $out"; return 1; }
    [ -f "$d/part-$i.txt" ] || return 1
  done
  echo "slurm: sbatch --wait --array=1-3 --chdir: $(((t1 - t0) / 1000000)) ms; each task saw its ID, COUNT=3, cwd and the submit env"
  # Without --chdir/--output: the submitter's cwd, output in slurm-<job>_<task>.out there.
  (cd "$d" && sbatch --quiet --wait --array=0-1 --wrap 'echo "$SLURM_ARRAY_TASK_ID $(pwd)"') || return 1
  ls "$d"/slurm-*_0.out "$d"/slurm-*_1.out >/dev/null || return 1
  # sbatch --wait returns the highest exit code of the array's tasks.
  if (cd "$d" && sbatch --quiet --wait --array=1-2 --wrap '[ "$SLURM_ARRAY_TASK_ID" = 1 ]'); then
    echo "a failing task did not fail sbatch --wait"; return 1
  fi
  echo "slurm: default output lands in the submit dir; a failing task makes sbatch --wait exit non-zero"
}

check_bwrap() {
  local w="$scratch/bwrap" n port pid rc
  mkdir -p "$w"
  local base=(--die-with-parent --new-session --clearenv --setenv PATH /usr/bin
    --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr --ro-bind /etc /etc
    --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --bind "$w" "$w" --chdir "$w")
  n=$(bwrap --unshare-pid "${base[@]}" sh -c 'ls /proc | grep -c "^[0-9][0-9]*$"') || return 1
  [ "$n" -le 5 ] || { echo "sandbox sees $n processes"; return 1; }
  echo "bwrap: --unshare-pid sandbox sees $n processes (host: $(ls /proc | grep -c '^[0-9][0-9]*$'))"
  # A server on the host's loopback (as the per-trial MCP server / model proxy will be).
  port=$(ci_free_port 18555)
  echo reachable >"$w/probe.txt"
  /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory "$w" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/probe.txt" >/dev/null && break; sleep 0.1; done
  rc=0
  [ "$(bwrap --unshare-all --share-net "${base[@]}" curl -sf -m 5 "http://127.0.0.1:$port/probe.txt")" = reachable ] || rc=1
  bwrap --unshare-all "${base[@]}" curl -sf -m 5 "http://127.0.0.1:$port/probe.txt" >/dev/null && rc=1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  [ $rc = 0 ] || { echo "bwrap network check failed"; return 1; }
  echo "bwrap: host 127.0.0.1:$port reachable with --share-net, unreachable with --unshare-net/--unshare-all"
  # The SDK venv runs inside a sandbox that binds only /usr and the venv.
  bwrap --unshare-all --share-net "${base[@]}" --ro-bind "$EVALUA_CI_HOME/sdk-venv" "$EVALUA_CI_HOME/sdk-venv" \
    "$EVALUA_SDK_PYTHON" -c 'import mcp, openai, anthropic; print("bwrap: EVALUA_SDK_PYTHON imports its SDKs inside the sandbox")' || return 1
}

check_phoenix() {
  "$EVALUA_CI_HOME/phoenix-venv/bin/python" "$here/phoenix_roundtrip.py"
}

ci_step "smoke: sdk venv + mcp" check_sdk || fail sdk
ci_step "smoke: postgres" check_pg || fail postgres
ci_step "smoke: slurm" check_slurm || fail slurm
ci_step "smoke: bwrap" check_bwrap || fail bwrap
ci_step "smoke: phoenix round trip" check_phoenix || fail phoenix
rm -rf "$scratch"
echo "SMOKE OK"
