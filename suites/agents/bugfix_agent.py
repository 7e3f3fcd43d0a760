#!/usr/bin/env python3
"""A reference coding agent for suites/bugfix_python.lua (standard library only).

It speaks evalua's JSON Lines protocol and works only through the evalua.tools
kit offered in the `start` message (list_dir, read_file, write_file, run),
the way a model-driven agent would: look, read, run the tests, edit, re-run.
It starts in the trial's own copy of the repository (cwd = "workdir"), but
uses the tools rather than the file system, so every step is recorded.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalua_protocol import call, recv, send  # noqa: E402

start = recv()
offered = {t["name"] for t in start["tools"]}
missing = {"list_dir", "read_file", "write_file", "run"} - offered
if missing:
    send({"type": "final", "content": "cannot work without tools: " + ", ".join(sorted(missing))})
    sys.exit(0)

call("list_dir", {"path": "."})
status, before, error = call("run", {"cmd": ["python3", "-m", "unittest", "-q"]})
status, src, error = call("read_file", {"path": "calc/ranges.py"})
if status != "ok":
    send({"type": "final", "content": "could not read calc/ranges.py: %s" % error})
    sys.exit(0)
code = src["content"]
fixed = code.replace("list(range(start, stop))", "list(range(start, stop + 1))")
if fixed == code:
    send({"type": "final", "content": "found nothing to fix"})
    sys.exit(0)
call("write_file", {"path": "calc/ranges.py", "content": fixed})
status, after, error = call("run", {"cmd": ["python3", "-m", "unittest", "-q"]})
ok = status == "ok" and after["exit_code"] == 0
send({"type": "final", "content": "Fixed inclusive_range: it now includes stop. Tests %s." % ("pass" if ok else "still fail")})
