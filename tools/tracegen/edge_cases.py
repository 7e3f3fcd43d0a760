#!/usr/bin/env python3
"""Edge-case trace files for the error handling of `evalua grade --traces`, derived from
the real pydantic-ai and openinference fixtures (run those generators first).

Writes into tests/fixtures/traces/edge/:
  malformed_line.otlp.jsonl      3 lines: good, a line cut mid-object, good
  truncated_last_line.otlp.jsonl 2 good lines, then half a line and no final newline
                                 (a collector stopped while writing)
  empty.otlp.jsonl               0 bytes
  blank_lines_crlf.otlp.jsonl    2 good lines with CRLF endings and blank lines around them
  orphans.otlp.jsonl             a pydantic-ai conversation whose invoke_agent root span is
                                 missing (its children point at a span that is not there),
                                 and an openinference conversation whose handle_ticket parent
                                 is missing
  duplicated_batch.otlp.jsonl    the same export request written twice (an exporter retry)
  no_known_spans.otlp.jsonl      a trace of an HTTP handler and SQL queries only: no GenAI,
                                 OpenInference or tool spans at all (made with the OTel SDK)

With --huge PATH [--mb N] it instead writes a large OTLP/JSON lines file (N MB, default 100)
by repeating refunds_prod.otlp.jsonl with fresh trace, span and conversation ids. Not
committed: the Rust tests synthesise their own big file at test time.

Run from the repository root:  /opt/tracegen-venv/bin/python tools/tracegen/edge_cases.py
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(__file__))

ROOT = "tests/fixtures/traces"
SEED = 1400


def read_lines(path):
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


def all_spans(requests):
    """[(resource, scope, span)] in file order."""
    out = []
    for d in requests:
        for rs in d["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    out.append((rs, ss, s))
    return out


def attr(span, key):
    for a in span.get("attributes", []):
        if a["key"] == key:
            return next(iter(a["value"].values()))
    return None


def request_of(triples):
    """One ExportTraceServiceRequest dict holding these spans, grouped like the SDK's encoder."""
    resources = []
    for rs, ss, s in triples:
        r = next((r for r in resources if r["_src"] is rs), None)
        if r is None:
            r = {"_src": rs, "resource": rs["resource"], "scopeSpans": [], **({"schemaUrl": rs["schemaUrl"]} if "schemaUrl" in rs else {})}
            resources.append(r)
        sc = next((x for x in r["scopeSpans"] if x["_src"] is ss), None)
        if sc is None:
            sc = {"_src": ss, "scope": ss["scope"], "spans": [], **({"schemaUrl": ss["schemaUrl"]} if "schemaUrl" in ss else {})}
            r["scopeSpans"].append(sc)
        sc["spans"].append(s)
    for r in resources:
        del r["_src"]
        for sc in r["scopeSpans"]:
            del sc["_src"]
    return {"resourceSpans": resources}


def line(d):
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def conversation(triples, conv_id):
    return [t for t in triples if attr(t[2], "gen_ai.conversation.id") == conv_id]


def pick(manifest, behaviour, file_prefix):
    return [c for c in manifest["conversations"] if c["behaviour"] == behaviour and c["file"].startswith(file_prefix)]


def no_known_spans(seed):
    """An HTTP handler with SQL queries, from the real OpenTelemetry SDK: nothing GenAI in it."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, Status, StatusCode

    import otlp_json
    from refunds_domain import PRODUCTION_DAY, FakeClock, install_fake_clock, seeded_id_generator, seeded_uuid

    clock = FakeClock(PRODUCTION_DAY, random.Random(seed + 1))
    clock.advance_ms(5 * 3600 * 1000)
    install_fake_clock(clock)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-api", "service.version": "3.2.0",
                                                        "service.instance.id": seeded_uuid(random.Random(seed + 3))}),
                              id_generator=seeded_id_generator(random.Random(seed + 2)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("shop-api.http", "3.2.0")
    for order, status in (("P-9930", 200), ("P-0000", 404)):
        with tracer.start_as_current_span("GET /api/orders/{id}", kind=SpanKind.SERVER, attributes={
                "http.request.method": "GET", "url.path": "/api/orders/" + order, "http.route": "/api/orders/{id}",
                "server.address": "shop-api.internal", "user_agent.original": "refunds-bot/1.4.2"}) as span:
            clock.advance_ms(3)
            with tracer.start_as_current_span("SELECT shop.pedidos", kind=SpanKind.CLIENT, attributes={
                    "db.system.name": "sqlite", "db.namespace": "shop", "db.operation.name": "SELECT",
                    "db.collection.name": "pedidos", "db.query.text": "SELECT * FROM pedidos WHERE id = ?"}):
                clock.advance_ms(2)
            if status == 200:
                with tracer.start_as_current_span("SELECT shop.clientes", kind=SpanKind.CLIENT, attributes={
                        "db.system.name": "sqlite", "db.namespace": "shop", "db.operation.name": "SELECT",
                        "db.collection.name": "clientes",
                        "db.query.text": "SELECT codigo_postal FROM clientes WHERE id = ?"}):
                    clock.advance_ms(1)
            span.set_attribute("http.response.status_code", status)
            if status >= 400:
                span.set_status(Status(StatusCode.ERROR))
                span.set_attribute("error.type", str(status))
        clock.advance_ms(40_000)
    return otlp_json.to_otlp_json(exporter.get_finished_spans())


def write_edges(root, seed):
    out = os.path.join(root, "edge")
    os.makedirs(out, exist_ok=True)
    man_p = json.load(open(os.path.join(root, "expected", "pydantic_ai.json"), encoding="utf-8"))
    man_o = json.load(open(os.path.join(root, "expected", "openinference.json"), encoding="utf-8"))
    prod = all_spans(read_lines(os.path.join(root, "pydantic_ai", "refunds_prod.otlp.jsonl")))
    oi = all_spans(read_lines(os.path.join(root, "openinference", "refunds_llm_only.otlp.jsonl")))
    prod_file = "pydantic_ai/refunds_prod"

    # small whole conversations to build from
    no_refund = [request_of(conversation(prod, c["conversation_id"])) for c in pick(man_p, "no_refund_due", prod_file)]
    claims = request_of(conversation(prod, pick(man_p, "claims_without_refund", prod_file)[0]["conversation_id"]))
    notes = {}

    good1, good2 = line(no_refund[0]), line(no_refund[1])
    with open(os.path.join(out, "malformed_line.otlp.jsonl"), "w", encoding="utf-8") as f:
        f.write(good1 + "\n" + line(claims)[:700] + "\n" + good2 + "\n")
    notes["malformed_line.otlp.jsonl"] = {
        "lines": {"1": "ok: " + pick(man_p, "no_refund_due", prod_file)[0]["conversation_id"],
                  "2": "malformed: the first 700 characters of a request",
                  "3": "ok: " + pick(man_p, "no_refund_due", prod_file)[1]["conversation_id"]}}

    with open(os.path.join(out, "truncated_last_line.otlp.jsonl"), "w", encoding="utf-8") as f:
        f.write(good1 + "\n" + good2 + "\n" + line(claims)[:3000])
    notes["truncated_last_line.otlp.jsonl"] = {"lines": {"1": "ok", "2": "ok", "3": "the first 3000 characters of a request, no newline"}}

    open(os.path.join(out, "empty.otlp.jsonl"), "w").close()
    notes["empty.otlp.jsonl"] = {"lines": {}}

    with open(os.path.join(out, "blank_lines_crlf.otlp.jsonl"), "w", encoding="utf-8", newline="") as f:
        f.write("\r\n" + good1 + "\r\n\r\n" + line(no_refund[1]) + "\r\n\r\n")
    notes["blank_lines_crlf.otlp.jsonl"] = {
        "conversations": [c["conversation_id"] for c in pick(man_p, "no_refund_due", prod_file)[:2]]}

    # orphans: drop the invoke_agent root of a pydantic-ai conversation and the app span of an openinference one
    c = pick(man_p, "claims_without_refund", prod_file)[1]
    conv = [t for t in conversation(prod, c["conversation_id"]) if attr(t[2], "gen_ai.operation.name") != "invoke_agent"]
    c2 = next(c2 for c2 in man_o["conversations"] if c2["grouped_by"] == "trace_id")
    conv2 = [t for t in oi if t[2]["traceId"] == c2["trace_ids"][0] and t[2]["name"] != "handle_ticket"]
    with open(os.path.join(out, "orphans.otlp.jsonl"), "w", encoding="utf-8") as f:
        f.write(line(request_of(conv)) + "\n" + line(request_of(conv2)) + "\n")
    notes["orphans.otlp.jsonl"] = {
        "pydantic_ai": {"conversation_id": c["conversation_id"], "missing_parent": conv[0][2].get("parentSpanId"),
                        "behaviour": c["behaviour"], "spans": len(conv),
                        "note": "no invoke_agent span: no final_result; the answer is only in the last chat span's gen_ai.output.messages"},
        "openinference": {"trace_id": c2["trace_ids"][0], "missing_parent": conv2[0][2].get("parentSpanId"),
                          "behaviour": c2["behaviour"], "spans": len(conv2), "note": "no session.id: grouped by trace id"}}

    dup = line(no_refund[1])
    with open(os.path.join(out, "duplicated_batch.otlp.jsonl"), "w", encoding="utf-8") as f:
        f.write(dup + "\n" + dup + "\n")
    notes["duplicated_batch.otlp.jsonl"] = {
        "conversation_id": pick(man_p, "no_refund_due", prod_file)[1]["conversation_id"],
        "note": "every span appears twice with the same ids; one lookup_order call, not two"}

    nk = no_known_spans(seed)
    with open(os.path.join(out, "no_known_spans.otlp.jsonl"), "w", encoding="utf-8") as f:
        f.write(line(nk) + "\n")
    notes["no_known_spans.otlp.jsonl"] = {
        "traces": sorted({s["traceId"] for rs in nk["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}),
        "note": "HTTP SERVER and SQL CLIENT spans only"}

    with open(os.path.join(root, "expected", "edge.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/tracegen/edge_cases.py", "files": notes}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("edge: %d files" % len(notes))


def write_huge(root, path, mb):
    """Repeat refunds_prod.otlp.jsonl with fresh ids until the file holds `mb` megabytes."""
    src = [line_.rstrip("\n") for line_ in open(os.path.join(root, "pydantic_ai", "refunds_prod.otlp.jsonl"), encoding="utf-8")]
    target = mb * 1_000_000
    written, copy_no = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            copy_no += 1
            tag = "%08x" % copy_no
            for text in src:
                d = json.loads(text)
                for rs in d["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for s in ss["spans"]:
                            s["traceId"] = tag + s["traceId"][8:]
                            s["spanId"] = tag + s["spanId"][8:]
                            if "parentSpanId" in s:
                                s["parentSpanId"] = tag + s["parentSpanId"][8:]
                            for a in s.get("attributes", []):
                                if a["key"] == "gen_ai.conversation.id":
                                    a["value"]["stringValue"] = tag + a["value"]["stringValue"][8:]
                out = line(d) + "\n"
                f.write(out)
                written += len(out.encode())
                if written >= target:
                    break
    print("wrote %s: %.1f MB, %d copies of refunds_prod" % (path, written / 1e6, copy_no))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--huge", metavar="PATH", help="write a large OTLP/JSON lines file there instead")
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    if args.huge:
        write_huge(args.root, args.huge, args.mb)
    else:
        write_edges(args.root, args.seed)


if __name__ == "__main__":
    main()
