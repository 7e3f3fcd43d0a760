#!/usr/bin/env python3
"""Tool-validation agent: calls an unknown tool, then lookup_order with an integer
order_id, then a valid lookup_order, and sends final with the three statuses ("error,error,ok").
Used by the tool-argument validation test (unknown tools and schema violations return error).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import call, recv, send  # noqa: E402

if recv() is None:
    sys.exit(0)
statuses = []
for name, args in [
    ("nonexistent_tool", {}),
    ("lookup_order", {"order_id": 12345}),
    ("lookup_order", {"order_id": "P-9930"}),
]:
    status, _, _ = call(name, args)
    if status == "eof":
        sys.exit(0)
    statuses.append(str(status))
send({"type": "final", "content": ",".join(statuses)})
