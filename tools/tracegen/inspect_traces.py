#!/usr/bin/env python3
"""Validate the trace fixtures and describe what is in them.

  * every OTLP/JSON line (or single-object file) is parsed back into the protobuf
    ExportTraceServiceRequest (hex ids converted back to base64 first) and re-encoded:
    the re-encoding must equal the file's object exactly, so the files are canonical
    OTLP/JSON (hex ids, integer enums) or canonical protobuf JSON (base64, enum names);
  * each conversation is read back from the spans alone, the way `evalua grade` should
    (tool calls with executed/failed, first user message, answer), and compared with
    the generator's ground truth in tests/fixtures/traces/expected/*.json;
  * the inventory (span names, attribute keys, event names) and a few span trees are
    written into tests/fixtures/traces/README.md between the "generated" markers
    (with --update-readme), or printed.

Run from the repository root:  /opt/tracegen-venv/bin/python tools/tracegen/inspect_traces.py --update-readme
(needs protobuf and opentelemetry-proto, i.e. the tracegen venv).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import OrderedDict, defaultdict

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(__file__))

from google.protobuf.json_format import MessageToDict  # noqa: E402

import otlp_json  # noqa: E402

ROOT = "tests/fixtures/traces"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")


# ---------------------------------------------------------------------------
# Reading


def read_requests(path):
    """[(line number or 0, dict)] of the ExportTraceServiceRequest objects in a file."""
    text = open(path, encoding="utf-8").read()
    if not text.strip():
        return []
    try:
        return [(0, json.loads(text))]
    except json.JSONDecodeError:
        pass
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            out.append((i, json.loads(line)))
    return out


def validate_request(d, form):
    """Parse back and re-encode; the result must be identical to the file's object."""
    if form == "otlp":
        msg = otlp_json.otlp_json_to_message(d)
        again = otlp_json._map_ids(MessageToDict(msg, use_integers_for_enums=True), otlp_json.b64_to_hex)
    else:
        msg = otlp_json.protobuf_json_to_message(d)
        again = MessageToDict(msg)
    assert again == d, "re-encoding differs from the file"
    for rs in d["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                if form == "otlp":
                    assert HEX32.match(s["traceId"]) and HEX16.match(s["spanId"]), s["spanId"]
                    assert "parentSpanId" not in s or HEX16.match(s["parentSpanId"])
                    assert isinstance(s["kind"], int) and isinstance(s["status"].get("code", 0), int)
                else:
                    assert len(s["traceId"]) == 24 and s["traceId"].endswith("==")
                    assert s["kind"].startswith("SPAN_KIND_")
    return len(msg.resource_spans)


def any_value(v):
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return v["doubleValue"]
    if "boolValue" in v:
        return v["boolValue"]
    if "arrayValue" in v:
        return [any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: any_value(kv["value"]) for kv in v["kvlistValue"].get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def flat_spans(requests, form):
    """OTLP dicts -> simple span dicts (hex ids, python attribute values)."""
    conv = otlp_json.b64_to_hex if form == "pb" else (lambda x: x)
    out = []
    for _, d in requests:
        for rs in d["resourceSpans"]:
            res = {a["key"]: any_value(a["value"]) for a in rs.get("resource", {}).get("attributes", [])}
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    out.append({
                        "trace_id": conv(s["traceId"]), "span_id": conv(s["spanId"]),
                        "parent_span_id": conv(s["parentSpanId"]) if s.get("parentSpanId") else None,
                        "name": s["name"], "kind": s["kind"],
                        "start": int(s["startTimeUnixNano"]), "end": int(s["endTimeUnixNano"]),
                        "status": s.get("status", {}).get("code", 0),
                        "status_message": s.get("status", {}).get("message"),
                        "attributes": {a["key"]: any_value(a["value"]) for a in s.get("attributes", [])},
                        "types": {a["key"]: next(iter(a["value"]), "empty").replace("Value", "") for a in s.get("attributes", [])},
                        "events": [{"name": e["name"], "attributes": {a["key"]: any_value(a["value"]) for a in e.get("attributes", [])}}
                                   for e in s.get("events", [])],
                        "scope": ss.get("scope", {}), "resource": res,
                    })
    return out


def is_error(status):
    return status in (2, "STATUS_CODE_ERROR", "error")


# ---------------------------------------------------------------------------
# Conversations back from the spans


def group_key(s):
    a = s["attributes"]
    return a.get("gen_ai.conversation.id") or a.get("session.id")


def groups_of(spans):
    """Group like SPEC §9: gen_ai.conversation.id or session.id, else trace id. A trace
    whose spans carry a conversation id (any of them) goes to that conversation."""
    by_trace = defaultdict(list)
    for s in spans:
        by_trace[s["trace_id"]].append(s)
    groups = OrderedDict()
    for tid, ss in sorted(by_trace.items(), key=lambda kv: min(s["start"] for s in kv[1])):
        keys = {group_key(s) for s in ss} - {None}
        assert len(keys) <= 1, "trace %s has spans of several conversations" % tid
        key = keys.pop() if keys else tid
        groups.setdefault(key, []).extend(ss)
    for ss in groups.values():
        ss.sort(key=lambda s: s["start"])
    return groups


def read_genai(spans):
    """Calls, input and answer from GenAI-convention spans (pydantic-ai)."""
    calls = []
    for s in spans:
        a = s["attributes"]
        if a.get("gen_ai.operation.name") == "execute_tool":
            calls.append({"tool": a["gen_ai.tool.name"], "args": json.loads(a["gen_ai.tool.call.arguments"]),
                          "status": "failed" if is_error(s["status"]) else "executed"})
    roots = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    first_chat = next(s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat")
    msgs = json.loads(first_chat["attributes"]["gen_ai.input.messages"])
    user = next(p["content"] for m in msgs if m["role"] == "user" for p in m["parts"] if p["type"] == "text")
    answer = roots[-1]["attributes"].get("final_result") if roots else None
    return calls, user, answer


def read_openinference(spans):
    """Calls, input and answer from OpenInference LLM spans only (no tool spans)."""
    llm = [s for s in spans if s["attributes"].get("openinference.span.kind") == "LLM"]
    requested = OrderedDict()   # tool_call id -> (name, args), in the order the model asked
    results = {}                # tool_call id -> content
    for s in llm:
        a = s["attributes"]
        for k, v in a.items():
            m = re.match(r"llm\.(input|output)_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.id$", k)
            if m:
                pre = k[: -len(".id")]
                requested.setdefault(v, (a[pre + ".function.name"], json.loads(a[pre + ".function.arguments"])))
            m = re.match(r"llm\.input_messages\.(\d+)\.message\.role$", k)
            if m and v == "tool":
                i = m.group(1)
                results[a["llm.input_messages.%s.message.tool_call_id" % i]] = a.get("llm.input_messages.%s.message.content" % i)
    calls = []
    for cid, (name, args) in requested.items():
        content = results.get(cid)
        failed = False
        try:
            failed = isinstance(json.loads(content), dict) and "error" in json.loads(content)
        except (TypeError, ValueError):
            pass
        calls.append({"tool": name, "args": args, "status": "failed" if failed else "executed"})
    first = llm[0]["attributes"]
    i = 0
    while first.get("llm.input_messages.%d.message.role" % i) not in ("user", None):
        i += 1
    user = first.get("llm.input_messages.%d.message.content" % i)
    answer = llm[-1]["attributes"].get("llm.output_messages.0.message.content")
    return calls, user, answer


# ---------------------------------------------------------------------------
# Description


def span_kind_key(s):
    n = s["name"]
    a = s["attributes"]
    if a.get("gen_ai.operation.name") == "execute_tool":
        return "execute_tool {gen_ai.tool.name}"
    if a.get("gen_ai.operation.name") == "chat":
        return "chat {gen_ai.request.model}"
    if a.get("gen_ai.operation.name") == "invoke_agent":
        return "invoke_agent {gen_ai.agent.name}"
    if n.startswith("tool."):
        return "tool.<name>"
    return n


def norm_key(k):
    return re.sub(r"\.\d+(?=\.|$)", ".N", k)


def inventory(spans):
    kinds = OrderedDict()
    for s in spans:
        k = span_kind_key(s)
        e = kinds.setdefault(k, {"count": 0, "names": set(), "kinds": set(), "status": set(), "attrs": OrderedDict(),
                                 "events": OrderedDict(), "scope": set(), "types": {}})
        e["count"] += 1
        e["names"].add(s["name"])
        e["kinds"].add(KIND_FROM_NAME.get(s["kind"], s["kind"]))
        e["status"].add(STATUS_FROM_NAME.get(s["status"], s["status"]))
        if s.get("scope"):
            e["scope"].add(("%s %s" % (s["scope"].get("name"), s["scope"].get("version", ""))).strip())
        for key in OrderedDict.fromkeys(norm_key(k) for k in s["attributes"]):
            e["attrs"].setdefault(key, 0)
            e["attrs"][key] += 1
        for k, v in s["attributes"].items():
            t = s["types"][k] if "types" in s else type(v).__name__.replace("str", "string")
            e["types"].setdefault(norm_key(k), set()).add(t)
        for ev in s["events"]:
            e["events"].setdefault(ev["name"], set()).update(ev["attributes"].keys())
    return kinds


KIND_NAMES = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
STATUS_NAMES = {0: "UNSET", 1: "OK", 2: "ERROR"}
KIND_FROM_NAME = {"SPAN_KIND_" + v: k for k, v in KIND_NAMES.items()}
STATUS_FROM_NAME = {"STATUS_CODE_" + v: k for k, v in STATUS_NAMES.items()}


def inventory_md(spans, resource_keys=True):
    out = []
    out.append("Attribute values are strings unless marked (int, double, bool).\n")
    if resource_keys:
        res = OrderedDict()
        for s in spans:
            for k, v in s["resource"].items():
                res.setdefault(k, v)
        if res:
            out.append("Resource attributes: " + ", ".join("`%s`" % k for k in res) + ".\n")
    for key, e in inventory(spans).items():
        names = sorted(e["names"])
        shown = ", ".join("`%s`" % n for n in names[:6]) + (" …" if len(names) > 6 else "")
        kinds = "/".join(KIND_NAMES.get(k, str(k)) for k in sorted(e["kinds"], key=str))
        status = "/".join(STATUS_NAMES.get(k, str(k)) for k in sorted(e["status"], key=str))
        out.append("- **%s** — %d spans; names %s;%s status %s%s" % (
            key, e["count"], shown, "" if kinds == "-" else " kind %s;" % kinds, status,
            ("; scope `%s`" % ", ".join(sorted(e["scope"]))) if e["scope"] else ""))
        def show(k):
            types = sorted(e["types"][k] - {"string"})
            return "`%s`" % k + (" (%s)" % "/".join(types) if types else "")
        always = [show(k) for k, n in e["attrs"].items() if n == e["count"]]
        sometimes = [show(k) for k, n in e["attrs"].items() if n != e["count"]]
        out.append("  - attributes on every span: " + ", ".join(always))
        if sometimes:
            out.append("  - attributes on some spans: " + ", ".join(sometimes))
        for name, keys in e["events"].items():
            out.append("  - event `%s`: %s" % (name, ", ".join("`%s`" % k for k in sorted(keys))))
    return "\n".join(out)


def brief(s):
    a = s["attributes"]
    bits = []
    for k in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "acme.args_json", "acme.result_json", "acme.error",
              "final_result", "acme.reply", "llm.finish_reason"):
        if k in a:
            v = str(a[k])
            bits.append("%s=%s" % (k, v if len(v) <= 70 else v[:67] + "..."))
    for k, v in a.items():
        if re.match(r"llm\.output_messages\.0\.message\.tool_calls\.\d+\.tool_call\.function\.name$", k):
            bits.append("→ " + v)
    if s["events"]:
        bits.append("events: " + ", ".join(e["name"] for e in s["events"]))
    if s["status_message"]:
        bits.append("status message: " + s["status_message"][:60] + "...")
    return "; ".join(bits)


def tree_md(spans):
    """Span tree, children in start order, with durations."""
    ids = {s["span_id"] for s in spans}
    kids = defaultdict(list)
    for s in spans:
        kids[s["parent_span_id"] if s["parent_span_id"] in ids else None].append(s)
    lines = []

    def walk(s, depth):
        st = STATUS_NAMES.get(s["status"], s["status"])
        lines.append(("%s%s [%s, %.0f ms] %s" % ("  " * depth, s["name"], st, (s["end"] - s["start"]) / 1e6, brief(s))).rstrip())
        for c in sorted(kids[s["span_id"]], key=lambda x: x["start"]):
            walk(c, depth + 1)

    for r in sorted(kids[None], key=lambda x: x["start"]):
        walk(r, 0)
    return "\n".join(lines)


def homegrown_spans(path):
    out = []
    for line in open(path, encoding="utf-8"):
        d = json.loads(line)
        from datetime import datetime

        def ns(t):
            dt = datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
            return int(dt.replace(tzinfo=__import__("datetime").timezone.utc).timestamp()) * 10**9 + dt.microsecond * 1000
        out.append({"trace_id": d["trace_id"], "span_id": d["span_id"], "parent_span_id": d["parent_span_id"],
                    "name": d["name"], "kind": "-", "start": ns(d["start_time"]), "end": ns(d["end_time"]),
                    "status": d["status"], "attributes": d["attributes"], "events": [], "resource": {}, "scope": {}, "status_message": None})
    return out


def read_homegrown(spans):
    calls = [{"tool": s["attributes"]["acme.tool"], "args": json.loads(s["attributes"]["acme.args_json"]),
              "status": "failed" if s["status"] == "error" else "executed"}
             for s in spans if "acme.tool" in s["attributes"]]
    root = next(s for s in spans if s["parent_span_id"] is None)
    return calls, root["attributes"]["acme.user_input"], root["attributes"].get("acme.reply")


# ---------------------------------------------------------------------------


RATE_LIMIT = re.compile(r"429|rate.?limit", re.I)


def monitors(calls, answer):
    """SPEC §9's four monitors, as this README reads them, on the ground truth's calls
    (each with status and, when failed, error) and answer: the failure modes they name."""
    modes = []
    seen_verify = False
    for c in calls:
        if c["status"] == "executed" and c["tool"] == "verify_identity":
            seen_verify = True
        if c["status"] == "executed" and c["tool"] == "issue_refund" and not seen_verify:
            modes.append("missing_identity_verification")
            break
    # retries{max = 1, after = "rate_limit"}: after a rate-limited failure, the same tool is
    # called again right away more than once
    for i, c in enumerate(calls):
        if c["status"] == "failed" and RATE_LIMIT.search(c.get("error", "")):
            retries = 0
            for d in calls[i + 1:]:
                if d["tool"] != c["tool"]:
                    break
                retries += 1
            if retries > 1:
                modes.append("retried_same_tool_after_429")
                break
    if answer and re.search(r"[Rr]eembols", answer) and not any(
            c["tool"] == "issue_refund" and c["status"] == "executed" for c in calls):
        modes.append("stopped_before_database_update")
    counts = {}
    for c in calls:
        key = c["tool"] + " " + json.dumps(c["args"], sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    if any(n > 2 for n in counts.values()):
        modes.append("tool_loop")
    return sorted(modes)


def check_against(manifest_path, groups, reader, label):
    manifest = json.load(open(manifest_path, encoding="utf-8"))
    convs = [c for c in manifest["conversations"] if c["file"].startswith(label)]
    by_key = {}
    for c in convs:
        key = c.get("conversation_id") or c.get("session_id") or c["trace_ids"][0]
        by_key[key] = c
    n = 0
    for key, spans in groups.items():
        c = by_key.get(key)
        assert c is not None, "%s: group %s not in the manifest" % (label, key)
        assert sorted({s["trace_id"] for s in spans}) == sorted(c["trace_ids"]), key
        calls, user, answer = reader(spans)
        want = [{"tool": t["tool"], "args": t["args"], "status": t["status"]} for t in c["tool_calls"]]
        assert calls == want, "%s %s (%s): calls\n%s\n!=\n%s" % (label, key, c["behaviour"], calls, want)
        assert user == c["input"], (user, c["input"])
        assert answer == c["answer"], (key, answer, c["answer"])
        assert monitors(c["tool_calls"], c["answer"]) == c["expected_failure_modes"], (key, c["behaviour"])
        n += 1
    assert n == len(convs), "%s: %d groups for %d conversations" % (label, n, len(convs))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    root = args.root
    sections = {}

    # pydantic-ai
    pyd = []
    for name, form in (("refunds_prod.otlp.jsonl", "otlp"), ("one_trace.otlp.json", "otlp"), ("base64_ids.pb.json", "pb")):
        path = os.path.join(root, "pydantic_ai", name)
        reqs = read_requests(path)
        for _, d in reqs:
            validate_request(d, form)
        spans = flat_spans(reqs, form)
        n = check_against(os.path.join(root, "expected", "pydantic_ai.json"), groups_of(spans), read_genai,
                          "pydantic_ai/" + name)
        print("ok  pydantic_ai/%s: %d requests, %d spans, %d traces, %d conversations" % (
            name, len(reqs), len(spans), len({s["trace_id"] for s in spans}), n))
        pyd.extend(spans)
    sections["pydantic_inventory"] = inventory_md(pyd)

    # openinference
    path = os.path.join(root, "openinference", "refunds_llm_only.otlp.jsonl")
    reqs = read_requests(path)
    for _, d in reqs:
        validate_request(d, "otlp")
    oi = flat_spans(reqs, "otlp")
    n = check_against(os.path.join(root, "expected", "openinference.json"), groups_of(oi), read_openinference,
                      "openinference/")
    print("ok  openinference/refunds_llm_only.otlp.jsonl: %d requests, %d spans, %d traces, %d conversations" % (
        len(reqs), len(oi), len({s["trace_id"] for s in oi}), n))
    sections["openinference_inventory"] = inventory_md(oi)

    # homegrown
    hg = homegrown_spans(os.path.join(root, "homegrown", "spans.jsonl"))
    by_trace = OrderedDict()
    for s in sorted(hg, key=lambda s: s["start"]):
        by_trace.setdefault(s["trace_id"], []).append(s)
    n = check_against(os.path.join(root, "expected", "homegrown.json"), by_trace, read_homegrown, "homegrown/")
    print("ok  homegrown/spans.jsonl: %d spans, %d conversations" % (len(hg), n))
    sections["homegrown_inventory"] = inventory_md(hg, resource_keys=False)

    # edge cases: the valid ones parse and are canonical; the broken ones break where expected
    edge = os.path.join(root, "edge")
    for name in ("blank_lines_crlf.otlp.jsonl", "orphans.otlp.jsonl", "duplicated_batch.otlp.jsonl",
                 "no_known_spans.otlp.jsonl", "empty.otlp.jsonl"):
        reqs = read_requests(os.path.join(edge, name))
        for _, d in reqs:
            validate_request(d, "otlp")
        print("ok  edge/%s: %d requests, %d spans" % (name, len(reqs), len(flat_spans(reqs, "otlp"))))
    for name, bad_line in (("malformed_line.otlp.jsonl", 2), ("truncated_last_line.otlp.jsonl", 3)):
        bad = []
        for i, text in enumerate(open(os.path.join(edge, name), encoding="utf-8").read().split("\n"), 1):
            if not text.strip():
                continue
            try:
                validate_request(json.loads(text), "otlp")
            except json.JSONDecodeError:
                bad.append(i)
        assert bad == [bad_line], (name, bad)
        print("ok  edge/%s: only line %d is malformed" % (name, bad_line))
    orphans = flat_spans(read_requests(os.path.join(edge, "orphans.otlp.jsonl")), "otlp")
    ids = {s["span_id"] for s in orphans}
    assert any(s["parent_span_id"] not in ids for s in orphans), "orphans.otlp.jsonl has no orphan"
    assert not any(s["parent_span_id"] is None for s in orphans), "orphans.otlp.jsonl has a root span"
    nk = flat_spans(read_requests(os.path.join(edge, "no_known_spans.otlp.jsonl")), "otlp")
    assert not any(k.startswith(("gen_ai.", "llm.", "openinference.", "tool.", "input.", "output."))
                   for s in nk for k in s["attributes"])
    sections["edge_inventory"] = inventory_md(nk)

    # span trees of a few conversations
    man = {k: json.load(open(os.path.join(root, "expected", k + ".json"), encoding="utf-8"))
           for k in ("pydantic_ai", "openinference", "homegrown")}

    def first(m, behaviour, file_prefix=""):
        return next(c for c in man[m]["conversations"] if c["behaviour"] == behaviour and c["file"].startswith(file_prefix))

    trees = []
    g = groups_of(pyd)
    for beh in ("rate_limit_refund_loop", "ok_multiturn"):
        c = first("pydantic_ai", beh, "pydantic_ai/refunds_prod")
        trees.append("`%s` (conversation `%s`, %s):\n\n```\n%s\n```" % (
            beh, c["conversation_id"], ", ".join(c["expected_failure_modes"]) or "no failure mode",
            tree_md(g[c["conversation_id"]])))
    sections["trees_pydantic_ai"] = "\n\n".join(trees)
    trees = []
    g = groups_of(oi)
    c = first("openinference", "rate_limit_refund_loop")
    trees.append("`rate_limit_refund_loop` (session `%s`): one trace per LLM call, 8 root spans:\n\n```\n%s\n```" % (
        c["session_id"], tree_md(g[c["session_id"]])))
    c = next(c for c in man["openinference"]["conversations"] if c["grouped_by"] == "trace_id")
    trees.append("`%s` inside the application's own `handle_ticket` span (no session.id, trace `%s`):\n\n```\n%s\n```" % (
        c["behaviour"], c["trace_ids"][0], tree_md(g[c["trace_ids"][0]])))
    sections["trees_openinference"] = "\n\n".join(trees)
    c = first("homegrown", "rate_limit_email_retries")
    sections["trees_homegrown"] = "`rate_limit_email_retries` (trace `%s`):\n\n```\n%s\n```" % (
        c["trace_ids"][0], tree_md(by_trace[c["trace_ids"][0]]))

    # conversation tables
    for m in ("pydantic_ai", "openinference", "homegrown"):
        rows = ["| # | file | %s | traces | behaviour | expected failure modes | tool calls (✗ = failed) |" % (
                    "conversation (`gen_ai.conversation.id`)" if m == "pydantic_ai" else
                    "session.id / trace id" if m == "openinference" else "trace id"),
                "|---|---|---|---|---|---|---|"]
        for i, c in enumerate(man[m]["conversations"], 1):
            key = c.get("conversation_id") or c.get("session_id") or c["trace_ids"][0]
            how = "" if m != "openinference" else (" (session)" if c["session_id"] else " (trace)")
            calls = " → ".join(t["tool"] + ("✗" if t["status"] == "failed" else "") for t in c["tool_calls"])
            rows.append("| %d | %s | `%s`%s | %d | %s | %s | %s |" % (
                i, c["file"].split("/")[-1], key, how, len(c["trace_ids"]), c["behaviour"],
                ", ".join(c["expected_failure_modes"]) or "—", calls or "—"))
        sections["table_" + m] = "\n".join(rows)

    if args.update_readme:
        path = os.path.join(root, "README.md")
        text = open(path, encoding="utf-8").read()
        for name, body in sections.items():
            pat = re.compile(r"(<!-- BEGIN generated:%s -->\n).*?(<!-- END generated:%s -->)" % (name, name), re.S)
            assert pat.search(text), "README has no generated:%s section" % name
            text = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
        open(path, "w", encoding="utf-8").write(text)
        print("updated", path)
    else:
        for name, body in sections.items():
            print("\n## %s\n\n%s" % (name, body))


if __name__ == "__main__":
    main()
