#!/usr/bin/env python3
"""Traces of a hand-written refunds agent loop in which only the openai client is
instrumented, with openinference-instrumentation-openai.

The loop calls chat.completions on a local mock OpenAI-compatible server (started in
this process on 127.0.0.1, it answers with each conversation's scripted tool calls and
final answer), runs the tools itself, uninstrumented, and sends the tool messages back.
So there are no tool spans: the tool calls are in the LLM spans'
llm.output_messages.*.tool_calls, their results in later llm.input_messages with role
"tool". A failed tool answers with a tool message whose content is {"error": "..."}.

Each chat completion is its own root span, so one conversation is several traces; most
conversations are wrapped in openinference's using_session(...), which puts session.id
on every span. Two are instead wrapped in the application's own plain OpenTelemetry span
("handle_ticket", no OpenInference kind) and have no session.id: one trace each.

Output: tests/fixtures/traces/openinference/refunds_llm_only.otlp.jsonl (OTLP/JSON lines)
and tests/fixtures/traces/expected/openinference.json.

Run from the repository root:  /opt/tracegen-venv/bin/python tools/tracegen/refunds_openinference.py
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
from contextlib import nullcontext
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.metadata import version

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(__file__))

import openai  # noqa: E402
from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import otlp_json  # noqa: E402
from refunds_domain import (PRODUCTION_DAY, SYSTEM_PROMPT, TOOL_SPECS, FakeClock, ShopBackend,  # noqa: E402
                            ToolError, expand_plan, install_fake_clock, seeded_call_id,
                            seeded_id_generator, seeded_uuid)

SEED = 1200

PLAN = [
    ("ok", 2),
    ("ok_multiturn", 1),
    ("no_refund_due", 1),
    ("identity_rejected", 1),
    ("missing_identity_verification", 1),
    ("rate_limit_refund_loop", 1),
    ("claims_without_refund", 1),
    ("lookup_loop", 1),
]
# conversations wrapped in the application's own span instead of using_session
PLAN_APP_SPAN = [("ok", 1), ("missing_identity_verification", 1)]

REQUEST_MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
MAX_MODEL_CALLS = 12

TOOLS = [{"type": "function", "function": spec} for spec in TOOL_SPECS]


class MockOpenAI:
    """A tiny OpenAI-compatible /v1/chat/completions that replays the current turn's steps."""

    def __init__(self, clock: FakeClock, rng: random.Random):
        self.clock, self.rng = clock, rng
        self.steps = iter(())
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = json.dumps(mock.complete(req)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d/v1" % self.server.server_port

    def complete(self, req: dict) -> dict:
        step = next(self.steps)
        self.clock.sleep_like(500, 2200)
        if step.text is not None:
            msg, finish = {"role": "assistant", "content": step.text, "refusal": None}, "stop"
            out_len = len(step.text)
        else:
            calls = [{"id": seeded_call_id(self.rng), "type": "function",
                      "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)}}
                     for c in step.calls]
            msg, finish = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}, "tool_calls"
            out_len = len(json.dumps(calls))
        prompt = len(json.dumps(req["messages"], ensure_ascii=False)) // 4 + 150
        completion = out_len // 4 + 5
        return {
            "id": "chatcmpl-" + "".join(self.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                                        for _ in range(29)),
            "object": "chat.completion", "created": self.clock.ns // 1_000_000_000, "model": RESPONSE_MODEL,
            "system_fingerprint": "fp_0ba0d124f1",
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


def run(args):
    rng = random.Random(args.seed)
    clock = FakeClock(PRODUCTION_DAY, random.Random(args.seed + 1))
    install_fake_clock(clock)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "refunds-bot", "service.version": "0.9.0",
                                  "openinference.project.name": "refunds-prod",
                                  "service.instance.id": seeded_uuid(random.Random(args.seed + 3))}),
        id_generator=seeded_id_generator(random.Random(args.seed + 2)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    app_tracer = provider.get_tracer("refunds-bot")

    scenarios = [(sc, True) for sc in expand_plan(PLAN, rng)]
    app_span = [(sc, False) for sc in expand_plan(PLAN_APP_SPAN, rng)]
    # put the two app-span conversations among the others
    scenarios.insert(4, app_span[0])
    scenarios.insert(8, app_span[1])

    manifest = {"generator": "tools/tracegen/refunds_openinference.py", "seed": args.seed,
                "framework": "openinference-instrumentation-openai %s on openai %s (only the client is instrumented)"
                             % (version("openinference-instrumentation-openai"), version("openai")),
                "versions": {p: version(p) for p in ("openinference-instrumentation-openai", "openinference-instrumentation",
                                                     "openinference-semantic-conventions", "openai", "opentelemetry-sdk",
                                                     "opentelemetry-exporter-otlp-proto-common", "protobuf")},
                "grouping": "session.id when the conversation ran in using_session (every LLM call is its own trace); "
                            "else the trace id of the application's handle_ticket span",
                "conversations": []}

    with MockOpenAI(clock, rng) as mock:
        client = openai.OpenAI(base_url=mock.base_url, api_key="sk-mock-not-a-key", max_retries=0)
        for sc, with_session in scenarios:
            clock.advance_ms(rng.uniform(60_000, 11 * 60_000))
            backend = ShopBackend(sc.faults)
            conv_id = seeded_uuid(rng) if with_session else None
            before = len(exporter.get_finished_spans())
            messages = [{"role": "system", "content": SYSTEM_PROMPT}]
            answer = None
            ctx = using_session(conv_id) if with_session else nullcontext()
            with ctx:
                span_ctx = nullcontext() if with_session else app_tracer.start_as_current_span("handle_ticket")
                with span_ctx as app_span_obj:
                    for i, turn in enumerate(sc.turns):
                        if i:
                            clock.advance_ms(rng.uniform(15_000, 90_000))
                        mock.steps = iter(turn.steps)
                        messages.append({"role": "user", "content": turn.user})
                        for _ in range(MAX_MODEL_CALLS):
                            resp = client.chat.completions.create(model=REQUEST_MODEL, messages=messages, tools=TOOLS)
                            msg = resp.choices[0].message
                            messages.append(msg.model_dump(exclude_none=True))
                            if not msg.tool_calls:
                                answer = msg.content
                                break
                            for tc in msg.tool_calls:
                                clock.sleep_like(40, 400)
                                try:
                                    result = backend.call(tc.function.name, json.loads(tc.function.arguments))
                                except ToolError as e:
                                    result = {"error": str(e)}
                                messages.append({"role": "tool", "tool_call_id": tc.id,
                                                 "content": json.dumps(result, ensure_ascii=False)})
                        left = list(mock.steps)
                        assert not left, "%s: %d scripted steps left unused" % (sc.behaviour, len(left))
                    if app_span_obj is not None:
                        app_span_obj.set_attribute("ticket.order_id", sc.order.id)
            spans = exporter.get_finished_spans()[before:]
            roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
            manifest["conversations"].append({
                "file": "openinference/refunds_llm_only.otlp.jsonl",
                "session_id": conv_id,
                "trace_ids": ["%032x" % s.context.trace_id for s in roots],
                "grouped_by": "session.id" if with_session else "trace_id",
                "behaviour": sc.behaviour,
                "description": sc.description,
                "expected_failure_modes": sorted(sc.expected_failure_modes),
                "order": sc.order.id,
                "input": sc.first_input,
                "turns": [t.user for t in sc.turns],
                "answer": answer,
                "tool_calls": backend.log,
                "spans": len(spans),
            })

    os.makedirs(args.out, exist_ok=True)
    spans = exporter.get_finished_spans()
    with open(os.path.join(args.out, "refunds_llm_only.otlp.jsonl"), "w", encoding="utf-8") as f:
        for batch in otlp_json.batches(spans, [6, 10, 4, 8]):
            f.write(otlp_json.line(otlp_json.to_otlp_json(batch)) + "\n")
    os.makedirs(os.path.dirname(args.manifest), exist_ok=True)
    with open(args.manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("openinference: %d conversations, %d spans" % (len(manifest["conversations"]), len(spans)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures/traces/openinference")
    ap.add_argument("--manifest", default="tests/fixtures/traces/expected/openinference.json")
    ap.add_argument("--seed", type=int, default=SEED)
    run(ap.parse_args())


if __name__ == "__main__":
    main()
