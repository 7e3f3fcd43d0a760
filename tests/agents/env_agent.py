#!/usr/bin/env python3
"""Introspection agent: after start, sends a final whose content is a JSON string with
its environment variables, working directory and the sorted file names in it.
Used by the sandbox/environment test (env scrubbing and per-trial temp cwd).
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import recv, send  # noqa: E402

recv()
report = {"env": dict(os.environ), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
send({"type": "final", "content": json.dumps(report, sort_keys=True)})
