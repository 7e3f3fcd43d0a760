#!/usr/bin/env python3
"""Calls each tool named on its command line once, with {} as arguments, and
answers with what it got back, as JSON: [[name, ok, content], ...].

Tools come over MCP when evalua sets EVALUA_MCP_URL (tools = "mcp"), else over
the JSON Lines protocol; the task input and the answer travel as JSON Lines.
Used by the injection test to see what reaches an agent.
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import recv, send  # noqa: E402
from mcp_agent import Lines, Mcp  # noqa: E402

start = recv()
if start is None:
    sys.exit(0)
url = os.environ.get("EVALUA_MCP_URL")
if url:
    tools = Mcp(url)
    tools.initialize()
else:
    tools = Lines(start)
seen = []
for name in [a for a in sys.argv[1:] if not a.startswith("--")]:
    ok, content = tools.call(name, {})
    seen.append([name, ok, content])
send({"type": "final", "content": json.dumps(seen)})
