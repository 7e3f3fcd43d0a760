"""Drive `evalua mcp` with the official MCP Python SDK (tests/mcp_server.rs).

    python mcp_client.py EVALUA_BIN PROJECT_ROOT

Lists the tools, runs suites/refunds.lua through run_suite (counting progress
notifications), reads a failing trial with show_trial, compares the run with
itself, grades recorded traces with grade_traces, and tries paths that leave the project root. Prints one JSON object
with what it saw; the Rust test asserts on it.
"""
import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def result(r):
    text = "".join(getattr(c, "text", "") for c in r.content)
    return {"is_error": bool(r.is_error), "text": text, "structured": r.structured_content}


async def main(binary, root):
    out = {}
    params = StdioServerParameters(command=binary, args=["mcp"], cwd=root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            out["server"] = init.server_info.name
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            out["suites"] = result(await s.call_tool("list_suites", {}))
            out["cases"] = result(await s.call_tool("list_cases", {"suite": "suites/refunds.lua"}))
            out["check"] = result(await s.call_tool("check_suite", {"suite": "suites/refunds.lua"}))
            out["check_bad"] = result(await s.call_tool("check_suite", {"suite": "suites/broken.lua"}))

            progress = []

            async def on_progress(done, total, message):
                progress.append({"done": done, "total": total, "message": message})

            t0 = time.monotonic()
            run = await s.call_tool(
                "run_suite", {"suite": "suites/refunds.lua", "trials": 5, "seed": 3}, progress_callback=on_progress
            )
            out["run_seconds"] = time.monotonic() - t0
            out["run"] = result(run)
            out["progress"] = progress
            one = await s.call_tool("run_suite", {"suite": "suites/refunds.lua", "trials": 2, "case": "reembolso_total_02"})
            out["run_one"] = result(one)

            doc = run.structured_content or {}
            entry = (doc.get("runs") or [{}])[0]
            failing = (entry.get("failing_trials") or {}).get("shown") or []
            out["failing"] = failing
            if failing:
                f = failing[0]
                out["show"] = result(await s.call_tool(
                    "show_trial", {"run_dir": entry["run_dir"], "case": f["case"], "trial": f["trial"]}))
                out["compare"] = result(await s.call_tool(
                    "compare_runs", {"base": entry["run_dir"], "candidate": entry["run_dir"]}))
            out["grade"] = result(await s.call_tool(
                "grade_traces", {"suite": "suites/refunds_prod.lua", "traces": ["traces/pydantic_ai"]}))
            attacks = [
                ("check_suite", {"suite": "../outside.lua"}),
                ("check_suite", {"suite": "/etc/passwd"}),
                ("check_suite", {"suite": "escape/outside.lua"}),
                ("check_suite", {"suite": "suites/../../outside.lua"}),
                ("list_cases", {"suite": "suites/refunds.lua", "out": "/tmp"}),
                ("run_suite", {"suite": "suites/refunds.lua", "baseline": "/"}),
                ("show_trial", {"run_dir": "..", "case": "x", "trial": 1}),
                ("grade_traces", {"suite": "suites/refunds.lua", "traces": ["/etc"]}),
                ("compare_runs", {"base": "escape", "candidate": "escape"}),
            ]
            out["attacks"] = []
            for name, args in attacks:
                out["attacks"].append({"tool": name, "args": args, **result(await s.call_tool(name, args))})
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
