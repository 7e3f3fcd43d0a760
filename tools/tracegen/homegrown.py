#!/usr/bin/env python3
"""A home-grown tracer, as a team writes one before adopting OpenTelemetry: a decorator
that times a function and writes one flat JSON object per span, as the span closes.

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex>" | null,
     "name": "...", "start_time": "2026-11-03T08:04:12.345678Z", "end_time": "...",
     "status": "ok" | "error", "attributes": {"acme.tool": "...", ...}}

Times are RFC 3339 / ISO 8601 strings in UTC with microseconds and a "Z". Attributes are
a flat map of strings and integers under the team's own names (acme.*), which no
convention knows, so a suite needs a trace_adapter(span) to read them:

  ticket  (root, one per conversation)  acme.ticket_id, acme.channel, acme.user_input (first
                                         user message), acme.reply (last reply)
  turn    (one per user message)         acme.turn, acme.message, acme.reply
  llm     (one per model call)           acme.model, acme.tokens_in, acme.tokens_out, acme.next
                                         ("tool" or "reply")
  tool.<name> (one per tool call)        acme.tool, acme.args_json, then acme.result_json, or
                                         acme.error with status "error"

The agent is the same scripted refunds agent as the other generators (refunds_domain).
Output: tests/fixtures/traces/homegrown/spans.jsonl and tests/fixtures/traces/expected/homegrown.json.
Needs only the standard library:  python3 tools/tracegen/homegrown.py
"""
from __future__ import annotations

import argparse
import contextvars
import functools
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(__file__))

from refunds_domain import (PRODUCTION_DAY, FakeClock, ShopBackend, ToolError, expand_plan,  # noqa: E402
                            seeded_uuid)

SEED = 1300

PLAN = [
    ("ok", 3),
    ("ok_multiturn", 1),
    ("no_refund_due", 1),
    ("missing_identity_verification", 2),
    ("rate_limit_refund_loop", 1),
    ("rate_limit_email_retries", 1),
    ("claims_without_refund", 2),
    ("lookup_loop", 1),
]


class Tracer:
    """The whole home-grown tracer: a current-span context variable and a decorator."""

    def __init__(self, out, clock: FakeClock, rng: random.Random):
        self.out, self.clock, self.rng = out, clock, rng
        self.current = contextvars.ContextVar("acme_span", default=None)

    def traced(self, name=None):
        """Decorator: the call becomes a span; `attrs` (a dict) is passed in to fill."""
        def wrap(fn):
            span_name = name or fn.__name__

            @functools.wraps(fn)
            def inner(*args, **kwargs):
                parent = self.current.get()
                span = {"trace_id": parent["trace_id"] if parent else "%032x" % self.rng.getrandbits(128),
                        "span_id": "%016x" % self.rng.getrandbits(64),
                        "parent_span_id": parent["span_id"] if parent else None,
                        "name": span_name(*args) if callable(span_name) else span_name,
                        "start_time": self.clock.iso_now(), "end_time": None, "status": "ok", "attributes": {}}
                token = self.current.set(span)
                try:
                    return fn(*args, attrs=span["attributes"], **kwargs)
                except Exception as e:
                    span["status"] = "error"
                    span["attributes"]["acme.error"] = str(e)
                    raise
                finally:
                    self.current.reset(token)
                    span["end_time"] = self.clock.iso_now()
                    self.out.write(json.dumps(span, ensure_ascii=False) + "\n")
            return inner
        return wrap


def make_agent(tracer: Tracer, clock: FakeClock, rng: random.Random):
    backend_ref = {}

    @tracer.traced(lambda name, args: "tool." + name)
    def run_tool(name, args, attrs):
        attrs["acme.tool"] = name
        attrs["acme.args_json"] = json.dumps(args, ensure_ascii=False)
        clock.sleep_like(40, 400)
        result = backend_ref["b"].call(name, args)
        attrs["acme.result_json"] = json.dumps(result, ensure_ascii=False)
        return result

    @tracer.traced("llm")
    def call_model(step, history, attrs):
        clock.sleep_like(500, 2200)
        attrs["acme.model"] = "gpt-4o-mini"
        attrs["acme.tokens_in"] = len(json.dumps(history, ensure_ascii=False)) // 4 + 120
        attrs["acme.tokens_out"] = len(json.dumps(step.text or [c.args for c in step.calls])) // 4 + 5
        attrs["acme.next"] = "reply" if step.text is not None else "tool"
        return step

    @tracer.traced("turn")
    def handle_turn(n, turn, history, attrs):
        attrs["acme.turn"] = n
        attrs["acme.message"] = turn.user
        history.append({"role": "user", "content": turn.user})
        for step in turn.steps:
            call_model(step, history)
            if step.text is not None:
                history.append({"role": "assistant", "content": step.text})
                attrs["acme.reply"] = step.text
                return step.text
            for c in step.calls:
                try:
                    result = run_tool(c.name, c.args)
                except ToolError as e:
                    result = {"error": str(e)}
                history.append({"role": "tool", "name": c.name, "content": result})
        return None

    @tracer.traced("ticket")
    def handle_ticket(ticket_id, sc, attrs):
        attrs["acme.ticket_id"] = ticket_id
        attrs["acme.channel"] = "chat" if len(sc.turns) > 1 else "backoffice"
        attrs["acme.user_input"] = sc.first_input
        history, reply = [], None
        for i, turn in enumerate(sc.turns):
            if i:
                clock.advance_ms(rng.uniform(15_000, 90_000))
            reply = handle_turn(i + 1, turn, history)
        attrs["acme.reply"] = reply
        return reply

    return backend_ref, handle_ticket


def run(args):
    rng = random.Random(args.seed)
    clock = FakeClock(PRODUCTION_DAY, random.Random(args.seed + 1))
    scenarios = expand_plan(PLAN, rng)
    manifest = {"generator": "tools/tracegen/homegrown.py", "seed": args.seed,
                "framework": "none: a home-grown decorator tracer writing flat JSON span lines (acme.* attributes)",
                "grouping": "trace_id (one trace per conversation, rooted at the 'ticket' span)",
                "conversations": []}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "spans.jsonl"), "w", encoding="utf-8") as out:
        tracer = Tracer(out, clock, random.Random(args.seed + 2))
        backend_ref, handle_ticket = make_agent(tracer, clock, rng)
        for sc in scenarios:
            clock.advance_ms(rng.uniform(60_000, 11 * 60_000))
            backend_ref["b"] = backend = ShopBackend(sc.faults)
            ticket_id = "T-%06d" % rng.randrange(10**6)
            pos = out.tell()
            reply = handle_ticket(ticket_id, sc)
            out.flush()
            with open(os.path.join(args.out, "spans.jsonl"), encoding="utf-8") as f:
                f.seek(pos)
                trace_id = json.loads(f.readline())["trace_id"]
            manifest["conversations"].append({
                "file": "homegrown/spans.jsonl", "trace_ids": [trace_id], "ticket_id": ticket_id,
                "behaviour": sc.behaviour, "description": sc.description,
                "expected_failure_modes": sorted(sc.expected_failure_modes), "order": sc.order.id,
                "input": sc.first_input, "turns": [t.user for t in sc.turns], "answer": reply,
                "tool_calls": backend.log,
            })
    os.makedirs(os.path.dirname(args.manifest), exist_ok=True)
    with open(args.manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("homegrown: %d conversations" % len(manifest["conversations"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/traces/homegrown")
    ap.add_argument("--manifest", default="tests/fixtures/traces/expected/homegrown.json")
    ap.add_argument("--seed", type=int, default=SEED)
    run(ap.parse_args())


if __name__ == "__main__":
    main()
