#!/usr/bin/env python3
"""Write a synthetic run dir of CASES x TRIALS trials, shaped as `evalua run`
leaves one (manifest.json, trials.jsonl, one trace per trial under traces/),
for the viewer's benchmark (bench/view.sh). No summary.json unless --summary
is given a finished run's summary.json to copy (the figures are recomputed
by the viewer from the records anyway).

About 30% of trials are not accepted: failed checks with evidence, some
critical, some grader errors, a few infrastructure errors, and failure modes
on some. Every record has 6 checks; every trace 3 tool calls. Seeded.

    bench/make_run.py OUT_DIR CASES TRIALS
"""
import json
import os
import random
import sys

out, cases, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261201)
os.makedirs(os.path.join(out, "traces"), exist_ok=True)
tags = ["refund", "lookup", "billing", "shipping", "attack"]
checks = ["sql: refund amount", "tools in order", "args issue_refund", "no_loops (max 2)",
          "identity_before_refund", "prohibited: no other order refunded"]
manifest = {
    "evalua_version": "bench", "run_id": f"bench-{cases}x{trials}", "started_at": "2026-12-01T10:00:00Z",
    "suite": {"name": "bench", "version": "1", "sha256": "00" * 32},
    "cases": [{"id": f"case_{c:05d}_{tags[c % 5]}", "trials": trials, "revision": f"rev{c}", "weight": 1.0,
               "tags": [tags[c % 5]], "difficulty": ["easy", "hard"][c % 2]} for c in range(cases)],
    "budget": {"max_tool_calls": 12}, "seed": 1,
    "gates": [{"name": "pass^3", "threshold": 0.5, "on": "point"},
              {"name": "critical_failures", "threshold": 0, "on": "point"}],
}
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=2)

with open(os.path.join(out, "trials.jsonl"), "w") as jl:
    for c, case in enumerate(manifest["cases"]):
        cid = case["id"]
        p = 0.4 + 0.6 * rng.random()  # each case its own success rate
        for t in range(1, trials + 1):
            r = rng.random()
            if r < p:
                o = "accepted"
            elif r < p + (1 - p) * 0.7:
                o = "failed"
            elif r < p + (1 - p) * 0.85:
                o = "critical"
            elif r < p + (1 - p) * 0.97:
                o = "grader_error"
            else:
                o = "infra_error"
            bad = rng.randrange(5) if o == "failed" else None
            res = []
            if o != "infra_error":
                for i, name in enumerate(checks):
                    passed = True
                    if o == "failed" and i == bad:
                        passed = False
                    if o == "critical" and i == 5:
                        passed = False
                    err = None
                    if o == "grader_error" and i == 4:
                        passed, err = None, "the judge answered undeterminable"
                    res.append({"name": name, "passed": passed, "critical": i == 5,
                                "evidence": {"query": "SELECT importe FROM reembolsos WHERE pedido = 'P-9930'",
                                             "expected": 19.9, "got": 19.9 if passed else 59.7},
                                "error": err})
            modes = []
            if o == "failed" and bad in (1, 3):
                modes = ["tool_loop"] if bad == 3 else ["missing_identity_verification"]
            calls = [] if o == "infra_error" else [
                {"id": f"c{k}", "name": n, "args": {"order_id": "P-9930", "amount": 19.9}, "status": "executed",
                 "effect": "read" if k == 1 else "write", "result": {"ok": True, "order": {"id": "P-9930", "total": 59.7}},
                 "started_ms": k * 1.5, "ended_ms": k * 1.5 + 0.7}
                for k, n in enumerate(["lookup_order", "verify_identity", "issue_refund"], 1)]
            usage = {"input_tokens": 812, "output_tokens": 95, "cost_usd": 0.0004, "turns": 3,
                     "tool_calls": len(calls), "wall_ms": 40.0}
            rec = {"case": cid, "trial": t, "seed": rng.randrange(1 << 62), "outcome": o,
                   "ended": "not_started" if o == "infra_error" else "final", "checks": res,
                   "calls": {"requested": len(calls), "executed": len(calls), "failed": 0, "rejected": 0,
                             "denied": 0, "faulted": 0},
                   "usage": usage, "wall_ms": 20 + 60 * rng.random(),
                   "answer": "Reembolsados 19,90 €. He enviado un correo al cliente 4821.",
                   "error": "the agent would not start" if o == "infra_error" else None,
                   "trace": f"traces/{cid}.{t}.json"}
            if modes:
                rec["failure_modes"] = modes
            jl.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
            trace = {"case": cid, "trial": t, "seed": rec["seed"], "input": "Reembolsa la unidad que falta.",
                     "outcome": o, "ended": rec["ended"], "answer": rec["answer"], "error": rec["error"],
                     "messages": [{"role": "user", "content": "Reembolsa la unidad que falta."},
                                  {"role": "agent", "content": rec["answer"]}],
                     "calls": calls, "outbox": [], "usage": usage, "checks": res, "log": [], "stderr_tail": None}
            with open(os.path.join(out, rec["trace"]), "w") as f:
                json.dump(trace, f, ensure_ascii=False, separators=(",", ":"))
