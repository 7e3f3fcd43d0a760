#!/usr/bin/env python3
"""Write recorded τ-bench trajectories in τ-bench's results format, made with
τ-bench's own tool code, for bench/taubench.sh (`evalua grade` re-executing them).

    python3 bench/taubench_results.py /path/to/taubench airline 4 > results.json

For each test task of the domain and each of N trials: the policy, the task's
instruction, each gold action as an assistant tool call answered by the tool
message τ-bench's tool returns on the data (fresh per trajectory, as τ-bench's
environment loads it), then the required outputs and ###STOP###. Every fifth
trial 1 drops its last action, every seventh trial 2 is unscored (reward_info
null: τ-bench's step limit), so the figures are not all 1. The reward is
τ-bench's: the final data's hash against the gold actions' (the outputs are
always said).
"""

import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "suites", "taubench"))
from make_reference import data_hash, play, upstream_tools  # noqa: E402


def main():
    src, domain, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tools = upstream_tools(src, domain)
    names = ["flights", "reservations", "users"] if domain == "airline" else ["orders", "products", "users"]
    fresh = {n: json.load(open(os.path.join(src, domain, "data", f"{n}.json"))) for n in names}
    policy = open(os.path.join(src, domain, "policy.md")).read()
    tasks = json.load(open(os.path.join(src, domain, "tasks_test.json")))
    out = []
    for trial in range(trials):
        for i, task in enumerate(tasks):
            data = copy.deepcopy(fresh)
            actions = [a for a in task["actions"] if a["name"] != "respond"]
            reward, scored = 1.0, True
            if trial == 1 and i % 5 == 0 and actions:
                actions = actions[:-1]
            if trial == 2 and i % 7 == 0:
                reward, scored = 0.0, False
            traj = [{"role": "system", "content": policy}, {"role": "user", "content": task["instruction"]}]
            for k, a in enumerate(actions):
                cid = f"call_{i}_{trial}_{k}"
                traj.append({"role": "assistant", "content": None, "tool_calls": [{
                    "id": cid, "type": "function",
                    "function": {"name": a["name"], "arguments": json.dumps(a["kwargs"])}}]})
                try:
                    obs = tools[a["name"]].invoke(data=data, **a["kwargs"])
                except Exception as e:  # noqa: BLE001  (τ-bench's env does the same)
                    obs = f"Error: {e}"
                traj.append({"role": "tool", "tool_call_id": cid, "name": a["name"], "content": obs})
            gold = copy.deepcopy(fresh)
            play(tools, gold, task["actions"])
            if data_hash(data) != data_hash(gold):
                reward = 0.0
            if not scored:
                reward = 0.0
            said = "\n".join(task.get("outputs") or []) or "Is there anything else I can help you with?"
            traj.append({"role": "assistant", "content": said})
            traj.append({"role": "user", "content": "###STOP###"})
            info = {"task": task, "source": "user",
                    "reward_info": {"reward": reward, "info": {"r_actions": reward}, "actions": task["actions"]} if scored else None}
            out.append({"task_id": i, "trial": trial, "reward": reward, "info": info, "traj": traj})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
