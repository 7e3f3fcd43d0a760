"""bench/evalua_mcp.sh's client: python evalua_mcp.py EVALUA_BIN PROJECT ROUNDS."""
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def direct(binary, root, seed):
    out = os.path.join(tempfile.mkdtemp(), "run")
    t0 = time.monotonic()
    p = subprocess.run([binary, "run", "suites/refunds.lua", "--json", "--quiet", "--seed", str(seed), "--out", out],
                       cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    dt = time.monotonic() - t0
    doc = json.loads(p.stdout)
    shutil.rmtree(os.path.dirname(out))
    return dt, doc["runs"][0]["counts"]["trials"]


async def main(binary, root, rounds):
    t0 = time.monotonic()
    params = StdioServerParameters(command=binary, args=["mcp"], cwd=root)
    # The server relays its children's stderr (their human text): not part of the figures.
    errlog = open(os.devnull, "w")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            start = time.monotonic() - t0
            print("session start (spawn, initialize, tools/list: %d tools): %.3f s" % (len(tools), start))
            via, plain = [], []
            for i in range(rounds):
                notes = []

                async def on_progress(done, total, message):
                    notes.append(done)

                order = ["mcp", "direct"] if i % 2 == 0 else ["direct", "mcp"]
                for which in order:
                    if which == "mcp":
                        t = time.monotonic()
                        r = await s.call_tool("run_suite", {"suite": "suites/refunds.lua", "seed": 100 + i},
                                              progress_callback=on_progress)
                        dt = time.monotonic() - t
                        doc = r.structured_content or {}
                        n = doc["runs"][0]["counts"]["trials"]
                        shutil.rmtree(doc["runs"][0]["run_dir"])
                        via.append(dt)
                        print("round %d  mcp run_suite   %.3f s  %d trials, %d progress notifications" % (i + 1, dt, n, len(notes)))
                    else:
                        dt, n = direct(binary, root, 100 + i)
                        plain.append(dt)
                        print("round %d  evalua run --json %.3f s  %d trials" % (i + 1, dt, n))
            mv, mp = statistics.median(via), statistics.median(plain)
            print("median: mcp run_suite %.3f s, evalua run --json %.3f s, difference %+.3f s (min %.3f / %.3f)"
                  % (mv, mp, mv - mp, min(via), min(plain)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
