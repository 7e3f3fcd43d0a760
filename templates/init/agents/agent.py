#!/usr/bin/env python3
"""An agent stub that speaks evalua's JSON Lines protocol (standard library only).

evalua starts this program once per trial, in a fresh work dir, and talks to it over
stdin/stdout, one JSON object per line:

  -> {"type": "start", "input": "...", "tools": [{"name", "description", "parameters"}], ...}
  <- {"type": "tool_call", "id": "c1", "name": "close_ticket", "arguments": {"ticket_id": "T-42"}}
  -> {"type": "tool_result", "id": "c1", "status": "ok" | "error" | "denied", "content": ..., "error": ...}
  <- {"type": "usage", "model": "...", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
  <- {"type": "final", "content": "the answer"}

Replace `decide` with your agent (a model call, your framework); keep `send`, `recv`
and `call`. Print debugging output to stderr, never to stdout: a stray stdout line is a
protocol error, and a trial whose agent broke the protocol or crashed (an uncaught
exception, a non-zero exit) is never accepted, even when its checks pass.
"""
import json
import re
import sys


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def recv():
    line = sys.stdin.readline()
    return json.loads(line) if line else None


_calls = 0


def call(name, arguments):
    """Ask evalua to run a tool; returns (status, content, error)."""
    global _calls
    _calls += 1
    send({"type": "tool_call", "id": "c%d" % _calls, "name": name, "arguments": arguments})
    reply = recv()
    if reply is None:
        sys.exit(0)
    return reply.get("status"), reply.get("content"), reply.get("error")


def decide(task, tools):
    """The agent's logic: here, close the ticket the request names."""
    match = re.search(r"\bT-\d+\b", task)
    if not match or "close_ticket" not in tools:
        return "I could not find a ticket to close."
    status, content, error = call("close_ticket", {"ticket_id": match.group(0)})
    if status != "ok":
        return "Could not close %s: %s" % (match.group(0), error)
    return "Closed ticket %s." % content["ticket_id"]


def main():
    start = recv()
    if start is None:
        return 0
    tools = {t["name"] for t in start.get("tools") or []}
    answer = decide(start.get("input") or "", tools)
    send({"type": "usage", "model": "stub", "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
    send({"type": "final", "content": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
