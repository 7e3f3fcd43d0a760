#!/usr/bin/env python3
"""Correct scripted agent for the partial-refund case: looks up the order, verifies
identity, refunds the undelivered units, emails the customer and reports usage.
Used by the refunds test (e.g. case reembolso_parcial_01) as the known-good agent.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # keep suites/agents free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evalua_protocol import call, recv, send  # noqa: E402

REQUIRED = ["lookup_order", "verify_identity", "issue_refund", "send_email"]


def fail(step, status, error):
    send({"type": "final", "content": "Failed at %s: status %s (%s)" % (step, status, error or "no error message")})
    sys.exit(0)


def main():
    start = recv()
    if start is None:
        return 0
    tool_names = {t.get("name") for t in start.get("tools") or []}
    if any(name not in tool_names for name in REQUIRED):
        send({"type": "final", "content": "tool missing"})
        return 0

    match = re.search(r"P-\d+", start.get("input") or "")
    if not match:
        send({"type": "final", "content": "No order id found in the request."})
        return 0
    order_id = match.group(0)

    status, order, error = call("lookup_order", {"order_id": order_id})
    if status != "ok":
        fail("lookup_order", status, error)

    customer_id = order["customer_id"]
    status, _, error = call("verify_identity", {"customer_id": customer_id, "postal_code": order["postal_code"]})
    if status != "ok":
        fail("verify_identity", status, error)

    amount = round(order["unit_price"] * (order["units"] - order["delivered"]), 2)
    status, _, error = call("issue_refund", {"order_id": order_id, "amount": amount})
    if status != "ok":
        fail("issue_refund", status, error)

    status, _, error = call("send_email", {
        "customer_id": customer_id,
        "subject": "Refund for order %s" % order_id,
        "body": "We have refunded %.2f EUR for the undelivered units of order %s." % (amount, order_id),
    })
    if status != "ok":
        fail("send_email", status, error)

    send({"type": "usage", "model": "scripted-python", "input_tokens": 500, "output_tokens": 60, "cost_usd": 0.0003})
    send({"type": "final", "content": "Refunded %.2f EUR for order %s; customer notified." % (amount, order_id)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
