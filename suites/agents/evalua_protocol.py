"""Tiny JSON Lines helper for evalua reference agents.

Provides send(obj), recv() and call(name, args); imported by the well-behaved
agents in this directory (refund, usage, bad_args, chatty, crash, env, fork).
"""
import json
import sys

_next_id = 0


def send(obj):
    """Write one JSON object as a single line to stdout and flush."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def recv():
    """Read one JSON object from stdin; return None on EOF (blank lines are skipped)."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        line = line.strip()
        if line:
            return json.loads(line)


def call(name, args):
    """Send a tool_call with id c1, c2, ... and wait for its tool_result.

    Returns (status, content, error). On EOF returns ("eof", None, "stdin closed").
    Messages that are not the matching tool_result are ignored.
    """
    global _next_id
    _next_id += 1
    call_id = "c%d" % _next_id
    send({"type": "tool_call", "id": call_id, "name": name, "arguments": args})
    while True:
        msg = recv()
        if msg is None:
            return ("eof", None, "stdin closed")
        if msg.get("type") == "tool_result" and msg.get("id") == call_id:
            return (msg.get("status"), msg.get("content"), msg.get("error"))
