#!/usr/bin/env python3
"""Production-like traces of a pydantic-ai refunds agent, from pydantic-ai's own
OpenTelemetry instrumentation.

The agent has the shop's four tools (lookup_order, verify_identity, issue_refund,
send_email). Its model is pydantic-ai's FunctionModel, driven by a script per
conversation (refunds_domain.build_scenario), so there is no network and each
conversation follows its seeded behaviour. Spans go to an in-memory exporter and are
written as OTLP/JSON (see otlp_json.py).

Outputs (default folder tests/fixtures/traces/pydantic_ai/):
  refunds_prod.otlp.jsonl  every "production" conversation, one ExportTraceServiceRequest
                           per line, in export batches (a trace may span lines)
  one_trace.otlp.json      one more conversation, a single pretty-printed object
  base64_ids.pb.json       two more conversations in the plain protobuf JSON mapping
                           (base64 ids, enum names), one request per line
and tests/fixtures/traces/expected/pydantic_ai.json, the ground truth per conversation.

Run from the repository root:  /opt/tracegen-venv/bin/python tools/tracegen/refunds_pydantic.py
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
from importlib.metadata import version

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(__file__))

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from pydantic_ai import Agent, ToolFailed  # noqa: E402
from pydantic_ai.capabilities import Instrumentation  # noqa: E402
from pydantic_ai.exceptions import UsageLimitExceeded  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

import otlp_json  # noqa: E402
from refunds_domain import (PRODUCTION_DAY, SYSTEM_PROMPT, FakeClock, ShopBackend, ToolError,  # noqa: E402
                            expand_plan, build_scenario, install_fake_clock, seeded_call_id,
                            seeded_id_generator, seeded_uuid, ORDERS)

SEED = 1100

# (behaviour, number of conversations) for refunds_prod.otlp.jsonl
PLAN = [
    ("ok", 5),
    ("ok_multiturn", 2),
    ("no_refund_due", 2),
    ("identity_rejected", 1),
    ("rate_limited_retry_once", 1),
    ("missing_identity_verification", 3),
    ("missing_identity_no_email", 1),
    ("rate_limit_email_retries", 2),
    ("rate_limit_refund_loop", 2),
    ("rate_limit_lookup_giveup", 1),
    ("claims_without_refund", 3),
    ("claims_without_refund_multiturn", 1),
    ("refund_failed_then_claims", 1),
    ("lookup_loop", 2),
    ("loop_hits_request_limit", 1),
    ("missing_identity_and_loop", 1),
]

MODEL_NAME = "gpt-4o-mini"
HERE = "tools/tracegen/refunds_pydantic.py"


def stable_path(fn):
    """Give this function's frames the script's path relative to the repository root: a failed
    tool's stack trace (in the span's exception event) then names the same file wherever the
    checkout is. Run from the repository root so the traceback still finds the source lines."""
    fn.__code__ = fn.__code__.replace(co_filename=HERE)
    return fn


class Runner:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.clock = FakeClock(PRODUCTION_DAY, random.Random(seed + 1))
        install_fake_clock(self.clock)
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "refunds-agent", "service.version": "1.4.2",
                                      "deployment.environment.name": "production",
                                      "service.instance.id": seeded_uuid(random.Random(seed + 3))}),
            id_generator=seeded_id_generator(random.Random(seed + 2)),
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.backend: ShopBackend | None = None
        self.steps = iter(())
        self.agent = self._make_agent()

    # The scripted model: the next step of the current turn, after a simulated latency.
    def _model(self, messages, info: AgentInfo) -> ModelResponse:
        step = next(self.steps)
        self.clock.sleep_like(500, 2200)
        if step.text is not None:
            return ModelResponse(parts=[TextPart(step.text)], model_name=MODEL_NAME)
        return ModelResponse(parts=[ToolCallPart(c.name, dict(c.args), tool_call_id=seeded_call_id(self.rng))
                                    for c in step.calls], model_name=MODEL_NAME)

    @stable_path
    def _tool(self, name: str, args: dict):
        self.clock.sleep_like(40, 400)
        try:
            return self.backend.call(name, args)
        except ToolError as e:
            raise ToolFailed(str(e)) from None

    def _make_agent(self) -> Agent:
        # model_request_parameters (every tool's full definition on every chat span) is left
        # out to keep the fixtures small; gen_ai.tool.definitions is emitted regardless.
        settings = InstrumentationSettings(tracer_provider=self.provider, include_model_request_parameters=False)
        agent = Agent(FunctionModel(self._model, model_name=MODEL_NAME), name="refund_agent",
                      instructions=SYSTEM_PROMPT, capabilities=[Instrumentation(settings=settings)])
        tool = self._tool

        @agent.tool_plain
        @stable_path
        def lookup_order(order_id: str) -> dict:
            """Look up an order: customer, units ordered and delivered, prices"""
            return tool("lookup_order", {"order_id": order_id})

        @agent.tool_plain
        @stable_path
        def verify_identity(customer_id: int, postal_code: str) -> dict:
            """Verify the customer's identity with their postal code"""
            return tool("verify_identity", {"customer_id": customer_id, "postal_code": postal_code})

        @agent.tool_plain
        @stable_path
        def issue_refund(order_id: str, amount: float) -> dict:
            """Refund an amount on an order"""
            return tool("issue_refund", {"order_id": order_id, "amount": amount})

        @agent.tool_plain
        @stable_path
        def send_email(customer_id: int, subject: str, body: str) -> dict:
            """Email a customer"""
            return tool("send_email", {"customer_id": customer_id, "subject": subject, "body": body})

        return agent

    async def conversation(self, sc) -> dict:
        """Run one scenario (one or more user turns); return its manifest entry."""
        self.clock.advance_ms(self.rng.uniform(60_000, 11 * 60_000))   # next customer
        self.backend = ShopBackend(sc.faults)
        conv_id = seeded_uuid(self.rng)
        before = len(self.exporter.get_finished_spans())
        history, answer, ended = None, None, "answered"
        for i, turn in enumerate(sc.turns):
            if i:
                self.clock.advance_ms(self.rng.uniform(15_000, 90_000))   # the customer types
            self.steps = iter(turn.steps)
            limits = UsageLimits(request_limit=sc.request_limit) if sc.request_limit else None
            try:
                result = await self.agent.run(turn.user, conversation_id=conv_id, run_id=seeded_uuid(self.rng),
                                              message_history=history, usage_limits=limits)
            except UsageLimitExceeded as e:
                answer, ended = None, "usage_limit_exceeded: %s" % e
                break
            history = result.all_messages()
            answer = result.output
            left = list(self.steps)
            assert not left, "%s: %d scripted steps left unused" % (sc.behaviour, len(left))
        spans = self.exporter.get_finished_spans()[before:]
        roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
        return {
            "conversation_id": conv_id,
            "trace_ids": ["%032x" % s.context.trace_id for s in roots],
            "behaviour": sc.behaviour,
            "description": sc.description,
            "expected_failure_modes": sorted(sc.expected_failure_modes),
            "order": sc.order.id,
            "input": sc.first_input,
            "turns": [t.user for t in sc.turns],
            "answer": answer,
            "ended": ended,
            "tool_calls": self.backend.log,
            "tool_sequence_collapsed": collapse([c["tool"] for c in self.backend.log]),
            "spans": len(spans),
        }


def collapse(names):
    out = []
    for n in names:
        if not out or out[-1] != n:
            out.append(n)
    return out


async def main_async(args):
    r = Runner(args.seed)
    os.makedirs(args.out, exist_ok=True)
    manifest = {"generator": "tools/tracegen/refunds_pydantic.py", "seed": args.seed,
                "framework": "pydantic-ai %s (built-in OpenTelemetry instrumentation, InstrumentationSettings version %d)"
                             % (version("pydantic-ai-slim"), InstrumentationSettings(tracer_provider=r.provider).version),
                "versions": {p: version(p) for p in ("pydantic-ai-slim", "opentelemetry-sdk", "opentelemetry-api",
                                                     "opentelemetry-exporter-otlp-proto-common", "protobuf")},
                "grouping": "gen_ai.conversation.id (on every span); a multi-turn conversation has one trace per turn",
                "conversations": []}

    # 1. the production day
    scenarios = expand_plan(PLAN, r.rng)
    for sc in scenarios:
        entry = await r.conversation(sc)
        entry["file"] = "pydantic_ai/refunds_prod.otlp.jsonl"
        manifest["conversations"].append(entry)
    spans = r.exporter.get_finished_spans()
    with open(os.path.join(args.out, "refunds_prod.otlp.jsonl"), "w", encoding="utf-8") as f:
        for batch in otlp_json.batches(spans, [7, 12, 5, 16, 9, 11]):
            f.write(otlp_json.line(otlp_json.to_otlp_json(batch)) + "\n")
    r.exporter.clear()

    # 2. one conversation, one pretty-printed object per file
    sc = build_scenario("refund_failed_then_claims", ORDERS["P-9930"], r.rng)
    entry = await r.conversation(sc)
    entry["file"] = "pydantic_ai/one_trace.otlp.json"
    manifest["conversations"].append(entry)
    with open(os.path.join(args.out, "one_trace.otlp.json"), "w", encoding="utf-8") as f:
        json.dump(otlp_json.to_otlp_json(r.exporter.get_finished_spans()), f, ensure_ascii=False, indent=2)
        f.write("\n")
    r.exporter.clear()

    # 3. the plain protobuf JSON mapping: base64 ids, enum names; one request per conversation
    lines = []
    for behaviour, order in (("ok", "P-7710"), ("missing_identity_verification", "P-8842")):
        sc = build_scenario(behaviour, ORDERS[order], r.rng)
        entry = await r.conversation(sc)
        entry["file"] = "pydantic_ai/base64_ids.pb.json"
        manifest["conversations"].append(entry)
        lines.append(otlp_json.line(otlp_json.to_protobuf_json(r.exporter.get_finished_spans())))
        r.exporter.clear()
    with open(os.path.join(args.out, "base64_ids.pb.json"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    os.makedirs(os.path.dirname(args.manifest), exist_ok=True)
    with open(args.manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("pydantic-ai: %d conversations" % len(manifest["conversations"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/traces/pydantic_ai")
    ap.add_argument("--manifest", default="tests/fixtures/traces/expected/pydantic_ai.json")
    ap.add_argument("--seed", type=int, default=SEED)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
