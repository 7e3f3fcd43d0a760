#!/usr/bin/env python3
"""Multi-turn agent: asks the simulated user two questions via "message", then sends a
final echoing both replies ("user said: <a> | <b>", null replies shown as "-").
Used by the simulated-user / multi-turn conversation test.
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import recv, send  # noqa: E402


def ask(question):
    send({"type": "message", "content": question})
    while True:
        msg = recv()
        if msg is None:
            sys.exit(0)
        if msg.get("type") == "user":
            content = msg.get("content")
            return "-" if content is None else str(content)


if recv() is None:
    sys.exit(0)
first = ask("What is your postal code?")
second = ask("Anything else?")
send({"type": "final", "content": "user said: %s | %s" % (first, second)})
