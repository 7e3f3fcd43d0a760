#!/usr/bin/env bash
# bench/mcp_overhead.sh: per-trial cost of command-agent trials whose tools are
# served over MCP (tools = "mcp"), against the same trials over JSON Lines.
#
# Each case of bench/mcp.lua runs alone, --jobs 1, release build, ROUNDS times
# alternating; wall time and CPU time (evalua plus its agents) per trial:
#   sh_mcp - sh_protocol: the harness's cost of starting and stopping a trial's
#                         MCP server (the agent never connects);
#   py_mcp - py_protocol: a Python agent doing one lookup over MCP (initialize,
#                         notifications/initialized, tools/list, tools/call)
#                         against one tool_call line: client and server together.
# CPU time is the steadier figure on a shared machine. BIN=path/to/evalua measures another build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=target/release/evalua; fi
BIN=$BIN N=${N:-500} NPY=${NPY:-40} ROUNDS=${ROUNDS:-3} python3 - <<'PY'
import os, resource, shutil, subprocess, tempfile, time

def run(case, n):
    out = tempfile.mkdtemp()
    shutil.rmtree(out)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([os.environ["BIN"], "run", "bench/mcp.lua", "--case", case, "--trials", str(n),
                    "--jobs", "1", "--out", out, "-q"], stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    accepted = open(os.path.join(out, "trials.jsonl")).read().count('"outcome":"accepted"')
    shutil.rmtree(out)
    assert accepted == n, "%s: %d of %d trials accepted" % (case, accepted, n)
    return wall * 1000 / n, cpu * 1000 / n

for a, b, n in [("sh_protocol", "sh_mcp", int(os.environ["N"])), ("py_protocol", "py_mcp", int(os.environ["NPY"]))]:
    for _ in range(int(os.environ["ROUNDS"])):
        (wa, ca), (wb, cb) = run(a, n), run(b, n)
        print("%-11s wall %7.2f ms cpu %7.2f ms | %-6s wall %7.2f ms cpu %7.2f ms | MCP: wall %+7.2f ms cpu %+6.2f ms  (n=%d)"
              % (a, wa, ca, b, wb, cb, wb - wa, cb - ca, n))
PY
