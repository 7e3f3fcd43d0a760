#!/usr/bin/env python3
"""Budget-burning agent: 100 times reports usage (10000 in / 1000 out tokens, 0.05 USD)
and calls lookup_order, then sends final "done" (5 USD and 1.1M tokens in total).
Used by the budget test (max_tokens / max_cost_usd must stop it early).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import call, recv, send  # noqa: E402

if recv() is None:
    sys.exit(0)
for _ in range(100):
    send({"type": "usage", "model": "scripted-python", "input_tokens": 10000, "output_tokens": 1000, "cost_usd": 0.05})
    status, _, _ = call("lookup_order", {"order_id": "P-9930"})
    if status == "eof":
        sys.exit(0)
send({"type": "final", "content": "done"})
