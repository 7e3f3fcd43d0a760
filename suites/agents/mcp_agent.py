#!/usr/bin/env python3
"""A small MCP-client agent for the refunds cases, Python standard library only.

Usage: mcp_agent.py [--plain] [MODE] [INPUT]

Tools come from the MCP server whose URL evalua puts in EVALUA_MCP_URL
(streamable HTTP: initialize, notifications/initialized, tools/list,
tools/call; JSON or SSE responses; the Mcp-Session-Id header is kept). Without
EVALUA_MCP_URL the same steps go through the JSON Lines protocol's tool_call
lines instead, so both ways can be compared on one script.

The task input and the answer travel as JSON Lines (start ... final), or with
--plain as the last argument and stdout (exit 0).

MODE:
  refund  (default) look up the order, verify identity, refund what was not
          delivered, email the customer
  probe   exercise the executor: an unknown tool, arguments that fail the
          schema, a refund before verify_identity (a `requires` policy), two
          good calls, then calls until max_tool_calls denies one
  list    answer with the tools as listed (JSON)
  crash   exit 3 after listing the tools
Arguments starting with "--" are ignored (tests use them to tag processes).
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # keep suites/agents free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalua_protocol import recv, send  # noqa: E402

PROTOCOL_VERSION = "2025-11-25"


class Mcp:
    """A minimal streamable-HTTP MCP client."""

    def __init__(self, url):
        self.url = url
        self.session = None
        self.version = None
        self.next_id = 0

    def _post(self, payload):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        req = urllib.request.Request(self.url, data=json.dumps(payload).encode(), headers=headers, method="POST")
        resp = urllib.request.urlopen(req, timeout=30)
        sid = resp.headers.get("Mcp-Session-Id")
        if sid:
            self.session = sid
        return resp

    def request(self, method, params=None):
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        with self._post(msg) as resp:
            ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype == "text/event-stream":
                reply = self._from_sse(resp, rid)
            else:
                reply = json.loads(resp.read() or b"null")
        if not isinstance(reply, dict) or reply.get("id") != rid:
            raise RuntimeError("no response to %s: %r" % (method, reply))
        if "error" in reply:
            raise RuntimeError("%s failed: %s" % (method, reply["error"]))
        return reply["result"]

    @staticmethod
    def _from_sse(resp, rid):
        """Read server-sent events until the response with id `rid`."""
        data = []
        for raw in resp:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
            elif line == "" and data:
                text = "\n".join(data)
                data = []
                if not text.strip():
                    continue
                msg = json.loads(text)
                if isinstance(msg, dict) and msg.get("id") == rid and ("result" in msg or "error" in msg):
                    return msg
        return None

    def notify(self, method):
        with self._post({"jsonrpc": "2.0", "method": method}) as resp:
            resp.read()

    def initialize(self):
        result = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "evalua-mcp-agent", "version": "0.1"},
        })
        self.version = result.get("protocolVersion")
        self.notify("notifications/initialized")
        return result

    def tools(self):
        return self.request("tools/list", {})["tools"]

    def call(self, name, args):
        """Returns (ok, content): the structured content (or text) and whether isError was unset."""
        r = self.request("tools/call", {"name": name, "arguments": args})
        text = "".join(c.get("text", "") for c in r.get("content", []) if c.get("type") == "text")
        content = r.get("structuredContent", text)
        return (not r.get("isError", False)), content


class Lines:
    """The same calls over the JSON Lines protocol (tool_call / tool_result)."""

    def __init__(self, start):
        self.start = start
        self.n = 0

    def tools(self):
        return [{"name": t["name"], "description": t.get("description"), "inputSchema": t.get("parameters")}
                for t in self.start.get("tools") or []]

    def call(self, name, args):
        self.n += 1
        cid = "c%d" % self.n
        send({"type": "tool_call", "id": cid, "name": name, "arguments": args})
        while True:
            msg = recv()
            if msg is None:
                sys.exit(0)
            if msg.get("type") == "tool_result" and msg.get("id") == cid:
                ok = msg.get("status") == "ok"
                return ok, msg.get("content") if ok else "%s: %s" % (msg.get("status"), msg.get("error"))


def refund(tools, text):
    m = re.search(r"P-\d+", text or "")
    if not m:
        return "No order id found in the request."
    order_id = m.group(0)
    ok, order = tools.call("lookup_order", {"order_id": order_id})
    if not ok:
        return "Failed at lookup_order: %s" % order
    amount = round(order["unit_price"] * (order["units"] - order["delivered"]), 2)
    if amount <= 0:
        return "Order %s was delivered in full; nothing to refund." % order_id
    ok, err = tools.call("verify_identity", {"customer_id": order["customer_id"], "postal_code": order["postal_code"]})
    if not ok:
        return "Failed at verify_identity: %s" % err
    ok, err = tools.call("issue_refund", {"order_id": order_id, "amount": amount})
    if not ok:
        return "Failed at issue_refund: %s" % err
    ok, err = tools.call("send_email", {
        "customer_id": order["customer_id"],
        "subject": "Refund for order %s" % order_id,
        "body": "We have refunded %.2f EUR for the undelivered units of order %s." % (amount, order_id),
    })
    if not ok:
        return "Failed at send_email: %s" % err
    return "Refunded %.2f EUR for order %s; customer notified." % (amount, order_id)


def probe(tools, text):
    seen = []
    steps = [
        ("delete_everything", {}),                                   # unknown tool: rejected
        ("lookup_order", {"order_id": 9930}),                        # schema: rejected
        ("issue_refund", {"order_id": "P-9930", "amount": 19.9}),    # requires verify_identity: denied
        ("lookup_order", {"order_id": "P-9930"}),                    # executed
        ("verify_identity", {"customer_id": 4821, "postal_code": "00000"}),  # handler error: failed
    ]
    steps += [("lookup_order", {"order_id": "P-9930"})] * 20         # until max_tool_calls denies one
    for name, args in steps:
        ok, content = tools.call(name, args)
        seen.append("%s:%s" % (name, "ok" if ok else str(content).split(":")[0]))
        if not ok and str(content).startswith("denied: budget"):
            break
    return "; ".join(seen)


def main(argv):
    plain = "--plain" in argv
    argv = [a for a in argv if not a.startswith("--")]
    mode = argv[0] if argv and argv[0] in ("refund", "probe", "list", "crash") else "refund"
    if plain:
        text = argv[-1] if argv else ""
    else:
        start = recv()
        if start is None:
            return 0
        text = start.get("input")
    url = os.environ.get("EVALUA_MCP_URL")
    if url:
        tools = Mcp(url)
        tools.initialize()
    elif plain:
        sys.stderr.write("--plain needs tools over MCP (EVALUA_MCP_URL)\n")
        return 2
    else:
        tools = Lines(start)
    listed = tools.tools()
    names = {t["name"] for t in listed}
    if mode == "list":
        answer = json.dumps(listed, sort_keys=True)
    elif mode == "crash":
        sys.stderr.write("crashing on purpose after listing %d tools\n" % len(names))
        return 3
    elif mode == "probe":
        answer = probe(tools, text)
    else:
        answer = refund(tools, text)
    if plain:
        sys.stdout.write(answer + "\n")
    else:
        send({"type": "usage", "model": "scripted-python", "input_tokens": 500, "output_tokens": 60, "cost_usd": 0.0003})
        send({"type": "final", "content": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
