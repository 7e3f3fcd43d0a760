#!/usr/bin/env python3
"""deploy/k8s/check_consistency.py: what a schema cannot check in these manifests.

kubernetes-validate checks each object against the API's JSON schema (field
names, types). This checks how the objects fit together and the rules the API
server enforces beyond the schema, for evalua's partitioned runs:

- the run Job is Indexed, EVALUA_PARTITIONS equals completions, parallelism
  is at most completions, restartPolicy is Never (required by podFailurePolicy
  and backoffLimitPerIndex);
- FailIndex rules only with backoffLimitPerIndex;
- the claim is ReadWriteMany and both Jobs mount it by its name;
- the merge Job reads the folder the run Job writes (same subPath) and writes
  elsewhere.

Usage: check_consistency.py [DIR]  (default: this file's folder). Exit 1 on a problem.
"""

import pathlib
import sys

import yaml


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def mounts_of(container):
    return {m["mountPath"]: m for m in container.get("volumeMounts", [])}


def main(folder):
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    by_name = {(d["kind"], d["metadata"]["name"]): (f, d) for f, d in docs}
    problems = []

    def need(cond, where, msg):
        if not cond:
            problems.append(f"{where}: {msg}")

    pvcs = {n: d for (k, n), (f, d) in by_name.items() if k == "PersistentVolumeClaim"}
    for n, d in pvcs.items():
        need("ReadWriteMany" in d["spec"].get("accessModes", []), f"PersistentVolumeClaim {n}",
             "accessModes must hold ReadWriteMany: the partitions run on several nodes at once")

    run = by_name.get(("Job", "evalua-run"))
    merge = by_name.get(("Job", "evalua-merge"))
    need(run is not None, "Job evalua-run", "missing")
    need(merge is not None, "Job evalua-merge", "missing")
    if run is None or merge is None:
        return problems

    for f, job in (run, merge):
        name = f"{f}: Job {job['metadata']['name']}"
        pod = job["spec"]["template"]["spec"]
        need(pod.get("restartPolicy") == "Never", name, "template.spec.restartPolicy must be Never")
        for v in pod.get("volumes", []):
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim is not None:
                need(claim in pvcs, name, f"volume {v['name']} names claim {claim!r}, not defined here")

    f, job = run
    where = f"{f}: Job evalua-run"
    spec = job["spec"]
    need(spec.get("completionMode") == "Indexed", where, "completionMode must be Indexed (JOB_COMPLETION_INDEX)")
    completions = spec.get("completions")
    need(isinstance(completions, int) and completions >= 1, where, "completions must be a positive integer")
    need(spec.get("parallelism", 1) <= (completions or 0), where, "parallelism above completions only idles")
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    if any(r.get("action") == "FailIndex" for r in rules):
        need("backoffLimitPerIndex" in spec, where, "a FailIndex rule needs backoffLimitPerIndex")
    (c,) = [c for c in spec["template"]["spec"]["containers"] if c["name"] == "evalua"]
    env = env_of(c)
    need(env.get("EVALUA_PARTITIONS") == str(completions), where,
         f"EVALUA_PARTITIONS is {env.get('EVALUA_PARTITIONS')!r} but completions is {completions}: they must match")
    script = " ".join(c.get("command", []) + c.get("args", []))
    need("--partition auto" in script, where, "the container must run `evalua run ... --partition auto`")
    need('JOB_COMPLETION_INDEX' in script and ('/parts/$idx' in script or '/parts/$JOB_COMPLETION_INDEX' in script), where,
         "the part must be written to /parts/$JOB_COMPLETION_INDEX")
    run_parts = mounts_of(c).get("/parts")
    need(run_parts is not None, where, "nothing is mounted at /parts")

    f, job = merge
    where = f"{f}: Job evalua-merge"
    (m,) = [c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == "evalua"]
    cmd = m.get("command", []) + m.get("args", [])
    need(cmd[:3] == ["evalua", "merge", "/parts"], where, "the container must run `evalua merge /parts --out ...`")
    merge_mounts = mounts_of(m)
    mp = merge_mounts.get("/parts")
    need(mp is not None, where, "nothing is mounted at /parts")
    if mp and run_parts:
        need(mp.get("subPath") == run_parts.get("subPath"), where,
             f"reads subPath {mp.get('subPath')!r} but evalua-run writes {run_parts.get('subPath')!r}")
    out = cmd[cmd.index("--out") + 1] if "--out" in cmd else None
    need(out in merge_mounts, where, f"--out {out} is not a mounted volume: the merged run would be lost")
    if out in merge_mounts and mp:
        need(merge_mounts[out].get("subPath") != mp.get("subPath"), where, "--out must not be the parts folder")
    return problems


if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
    found = main(folder)
    for p in found:
        print("ERROR", p)
    if not found:
        print(f"INFO {folder}: the run Job, the merge Job and the claim fit together")
    sys.exit(1 if found else 0)
