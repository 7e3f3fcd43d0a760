#!/usr/bin/env python3
"""Record what τ-bench's own tools return, for the port's test.

    python3 suites/taubench/make_reference.py /path/to/taubench > tests/fixtures/taubench/reference.json

Runs, with τ-bench's tool code (`<taubench>/upstream/<domain>/*.py`) and its
environment's rules (base.py: a fresh copy of the data per task; a tool that
raises gives `Error: <message>`), every task's gold actions in order and every
probe sequence of tests/fixtures/taubench/probes.json (each on fresh data),
and writes the sha256 of each result as the agent sees it (None as `null`)
with its first characters, and the sha256 of the final data (the hash
τ-bench's reward compares). tests/taubench.rs runs the same calls through
the Lua port and compares.
"""

import copy
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import tools_info  # noqa: E402  (loads the upstream tools)


def upstream_tools(src, domain):
    import importlib

    tools_info(src, domain)  # registers the package
    mod = sys.modules[f"taubench_upstream_{domain}"]
    return {t.get_info()["function"]["name"]: t for t in mod.ALL_TOOLS}


def to_hashable(item):
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(e) for e in item)
    return item


def data_hash(data):
    return hashlib.sha256(str(to_hashable(data)).encode("utf-8")).hexdigest()


def play(tools, data, calls):
    out = []
    for c in calls:
        name, kwargs = c["name"], c.get("kwargs", c.get("args", {}))
        if name in tools:
            try:
                obs = tools[name].invoke(data=data, **kwargs)
            except Exception as e:  # noqa: BLE001  (τ-bench's env does the same)
                obs = f"Error: {e}"
        else:
            obs = f"Unknown action {name}"
        text = "null" if obs is None else obs
        out.append({"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "start": text[:60]})
    return out


def main():
    src = sys.argv[1]
    probes = json.load(open(os.path.join(HERE, "..", "..", "tests", "fixtures", "taubench", "probes.json")))
    ref = {}
    for domain, files in [("airline", ["tasks_test.json"]), ("retail", ["tasks_test.json", "tasks_dev.json"])]:
        tools = upstream_tools(src, domain)
        names = ["flights", "reservations", "users"] if domain == "airline" else ["orders", "products", "users"]
        fresh = {n: json.load(open(os.path.join(src, domain, "data", f"{n}.json"))) for n in names}
        ref[domain] = {}
        for f in files:
            prefix = "task_" if f == "tasks_test.json" else "dev_"
            tasks = json.load(open(os.path.join(src, domain, f)))
            for i, task in enumerate(tasks):
                data = copy.deepcopy(fresh)
                results = play(tools, data, task["actions"])
                ref[domain][f"{prefix}{i}"] = {"results": results, "data_sha256": data_hash(data)}
        ref[domain]["probes"] = []
        for seq in probes[domain]:
            data = copy.deepcopy(fresh)
            results = play(tools, data, seq)
            ref[domain]["probes"].append({"results": results, "data_sha256": data_hash(data)})
    json.dump(ref, sys.stdout, indent=1, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
