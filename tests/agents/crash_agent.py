#!/usr/bin/env python3
"""Misbehaving agent: after start, logs "about to fail: boom" to stderr, makes one
lookup_order call, reads the result and exits with status 3 without a final message.
Used by the crash test (the host must record the exit code, the stderr tail and the trace so far).
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import call, recv  # noqa: E402

recv()
sys.stderr.write("about to fail: boom\n")
sys.stderr.flush()
call("lookup_order", {"order_id": "P-9930"})
sys.exit(3)
