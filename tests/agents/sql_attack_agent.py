#!/usr/bin/env python3
"""A hostile agent with one SQL tool (`sql {"sql": ...}`): what a prompt-injected
agent would send through a tool that passes its SQL to the trial's database.

The task input is JSON: {"each": [...], "attacks": [...]}. It first lists the
run's other databases (its siblings: they share the first 24 characters of
the name), then sends each statement of "each" once per sibling ({db} is
the sibling's name), then each of "attacks". It answers with what it got
back, as JSON: [[sql, ok, content or error], ...]. Used by
tests/isolation_postgres.rs.
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import recv, send  # noqa: E402
from mcp_agent import Lines  # noqa: E402

start = recv()
if start is None:
    sys.exit(0)
plan = json.loads(start.get("input") or "{}")
tools = Lines(start)
seen = []


def sql(q):
    ok, content = tools.call("sql", {"sql": q})
    seen.append([q, ok, content])
    return ok, content


ok, listing = sql(
    "SELECT datname::text FROM pg_database WHERE left(datname, 24) = left(current_database(), 24) "
    "AND datname <> current_database() ORDER BY 1"
)
siblings = [row[0] for row in listing["rows"]] if ok else []
for q in plan.get("each", []):
    for db in siblings:
        sql(q.replace("{db}", db))
for q in plan.get("attacks", []):
    sql(q)
send({"type": "final", "content": json.dumps(seen)})
