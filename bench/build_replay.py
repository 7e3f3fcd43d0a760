#!/usr/bin/env python3
"""bench/build_replay.py: what a build measured on a loaded machine would take on an idle one.

    bench/build_replay.py TIMINGS.html CPU.log UNIT_GRAPH.json [CORES]

bench/build.sh runs it after a cold build. A shared machine's wall time says more about the
other tenants than about the build, but the CPU each unit took does not depend much on them.
This replays the build's units on CORES idle cores (default 2), each taking the CPU-seconds it
took in the measured build, in the order cargo's dependency graph allows:

- the graph is cargo's own (`cargo build --unit-graph`), so a unit waits for every unit it
  depends on, not only for the one that happened to finish last in the measured build;
- pipelining as cargo does it: a library waits only for its library dependencies' metadata
  (the end of their frontend, the `sections` of the timings report), anything that links
  (binaries, build scripts, proc-macros) waits for whole libraries;
- a unit's CPU is what rustc (bench/rustc_cpu.sh) or the C compiler (bench/cc_cpu.sh) took; a
  library's frontend/codegen split is the one of its wall times in the report; a build script's
  own run outside the C compiler is counted as its wall time (it is short);
- as with cargo's jobserver, at most CORES units run at once, each on one core; a core nobody
  else can use goes to a running unit that can use it: a library in its codegen (rustc splits
  it into codegen units) or a build script compiling more than one C file; the frontend and a
  single C file (SQLite's amalgamation) use one core;
- among ready units the one with the most work depending on it starts first (cargo's rule).

Prints the replayed wall time, the critical path's largest units, and the total CPU. This is a
model: it ignores cargo's own time, disk waits and how rustc's codegen units balance; compare
its figure with a build timed on a quiet machine when there is one. Not a test.
"""
import collections
import json
import re
import sys


def load_units(html):
    text = open(html, encoding="utf-8").read()
    return json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", text, re.S).group(1))


def kind_of_timing(u):
    t = u["target"].strip()
    if t.endswith("(run)"):
        return "run"
    if t.startswith("build-script"):
        return "build-script"
    if '"bin"' in t or t.startswith("bin"):
        return "bin"
    return "lib" if t == "" else t


def kind_of_graph(g):
    if g["mode"] == "run-custom-build":
        return "run"
    kinds = g["target"]["kind"]
    if "custom-build" in kinds:
        return "build-script"
    if "bin" in kinds:
        return "bin"
    return "lib"


def pkg_of(pkg_id):
    # "registry+https://…#name@1.2.3", "path+file:///…#0.1.0" (name from the path), …
    frag = pkg_id.rsplit("#", 1)[-1]
    if "@" in frag:
        name, ver = frag.rsplit("@", 1)
    else:
        name, ver = pkg_id.rsplit("#", 1)[0].rstrip("/").rsplit("/", 1)[-1], frag
    return name, ver


def main():
    html, cpu_log, graph_path = sys.argv[1:4]
    cores = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    units = load_units(html)
    graph = json.load(open(graph_path, encoding="utf-8"))["units"]

    # CPU per (package, kind) from the wrappers' log.
    rustc_cpu = collections.defaultdict(float)   # (pkg, kind) -> s
    cc_cpu = collections.defaultdict(float)      # pkg -> s
    cc_files = collections.Counter()
    for line in open(cpu_log, encoding="utf-8"):
        parts = line.split()
        if len(parts) != 5:
            continue
        try:
            s = float(parts[0]) + float(parts[1])
        except ValueError:
            continue
        crate, pkg, ctype = parts[2], parts[3], parts[4]
        if crate == "cc" and ctype == "-":   # bench/cc_cpu.sh (the `cc` crate itself is rustc's, "lib")
            cc_cpu[pkg] += s
            cc_files[pkg] += 1
        elif crate == "-":
            continue  # rustc -vV and other probes
        elif crate.startswith("build_script_"):
            rustc_cpu[(pkg, "build-script")] += s
        elif ctype == "bin":
            rustc_cpu[(pkg, "bin")] += s
        else:
            rustc_cpu[(pkg, "lib")] += s

    # Split a package's CPU among its units of one kind (a crate built twice) by wall time.
    walls = collections.defaultdict(float)
    for u in units:
        walls[(u["name"], kind_of_timing(u))] += u["duration"]
    cpu, front, par = {}, {}, {}
    for u in units:
        k = kind_of_timing(u)
        key = (u["name"], k)
        share = u["duration"] / walls[key] if walls[key] else 1.0
        if k == "run":
            c = cc_cpu.get(u["name"], 0.0) * share
            own = u["duration"] if not cc_files.get(u["name"]) else 0.0
            cpu[u["i"]] = c + min(own, 5.0)
            front[u["i"]] = 0.0
            par[u["i"]] = min(cores, max(1, cc_files.get(u["name"], 1) - 1))
        else:
            c = rustc_cpu.get(key)
            cpu[u["i"]] = c * share if c is not None else u["duration"]
            secs = dict(u["sections"]) if u["sections"] else None
            if secs and "frontend" in secs and u["duration"] > 0:
                front[u["i"]] = cpu[u["i"]] * secs["frontend"]["end"] / u["duration"]
                par[u["i"]] = cores
            else:
                front[u["i"]] = None   # no pipelining: metadata only at the end
                par[u["i"]] = 1 if k in ("build-script",) else cores

    # Match the unit graph to the timings' units: (name, version, kind, features), in order.
    by_key = collections.defaultdict(list)
    for u in units:
        by_key[(u["name"], u["version"], kind_of_timing(u), tuple(sorted(u["features"])))].append(u["i"])
    g2t = {}
    for gi, g in enumerate(graph):
        name, ver = pkg_of(g["pkg_id"])
        key = (name, ver, kind_of_graph(g), tuple(sorted(g["features"])))
        if by_key.get(key):
            g2t[gi] = by_key[key].pop(0)
    unmatched = [i for lst in by_key.values() for i in lst]

    deps = collections.defaultdict(list)   # unit -> [(dep unit, needs only metadata)]
    kinds = {u["i"]: kind_of_timing(u) for u in units}
    for gi, g in enumerate(graph):
        if gi not in g2t:
            continue
        me = g2t[gi]
        for d in g["dependencies"]:
            if d["index"] not in g2t:
                continue
            dep = g2t[d["index"]]
            meta_only = front[me] is not None and front[dep] is not None and kinds[dep] == "lib"
            deps[me].append((dep, meta_only))

    # Priority: the CPU of everything that transitively waits for a unit.
    rdeps = collections.defaultdict(set)
    for me, ds in deps.items():
        for dep, _ in ds:
            rdeps[dep].add(me)
    prio = {}
    def weight(i, seen):
        for r in rdeps[i]:
            if r not in seen:
                seen.add(r)
                weight(r, seen)
        return seen
    for u in units:
        prio[u["i"]] = cpu[u["i"]] + sum(cpu[r] for r in weight(u["i"], set()))

    names = {u["i"]: (u["name"] + ("" if kinds[u["i"]] == "lib" else " (%s)" % kinds[u["i"]])) for u in units}
    ids = [u["i"] for u in units]
    meta_at, done_at, start_at = {}, {}, {}
    rem_front = {i: (front[i] if front[i] is not None else 0.0) for i in ids}
    rem_code = {i: cpu[i] - rem_front[i] for i in ids}
    running = []
    t = 0.0
    waiting = set(ids)

    def ready(i):
        return all((d in meta_at) if meta else (d in done_at) for d, meta in deps[i])

    while waiting or running:
        for i in sorted((i for i in waiting if ready(i)), key=lambda i: -prio[i]):
            if len(running) >= cores:
                break
            running.append(i)
            waiting.discard(i)
            start_at[i] = t
        if not running:
            raise SystemExit("build_replay.py: a cycle or an unmatched dependency; cannot go on")
        # One core each; spare cores to units that can use more (codegen, several C files).
        rate = {i: 1.0 for i in running}
        spare = cores - len(running)
        for i in sorted(running, key=lambda i: -prio[i]):
            if spare <= 0:
                break
            if rem_front[i] <= 1e-9 and par[i] > 1:
                extra = min(spare, par[i] - 1)
                rate[i] += extra
                spare -= extra
        step = min((rem_front[i] if rem_front[i] > 1e-9 else rem_code[i]) / rate[i] for i in running)
        step = max(step, 0.0)
        t += step
        for i in list(running):
            if rem_front[i] > 1e-9:
                rem_front[i] -= step * rate[i]
                if rem_front[i] <= 1e-9:
                    rem_front[i] = 0.0
                    if front[i] is not None:
                        meta_at[i] = t
            else:
                rem_code[i] -= step * rate[i]
                if rem_code[i] <= 1e-9:
                    done_at[i] = t
                    meta_at.setdefault(i, t)
                    running.remove(i)

    total_cpu = sum(cpu.values())
    # The critical path: walk back from the last unit through the dependency that ended last.
    last = max(done_at, key=done_at.get)
    path = []
    i = last
    while i is not None:
        path.append(i)
        cands = [(meta_at[d] if meta else done_at[d], d) for d, meta in deps[i]]
        i = max(cands)[1] if cands else None
    print("replay on %d idle cores: %.0f s (%.1f min); units %d (%d not in the unit graph), CPU %.0f s, CPU / cores %.0f s"
          % (cores, t, t / 60, len(ids), len(unmatched), total_cpu, total_cpu / cores))
    print("critical path (last first; start → end, CPU):")
    for i in path[:12]:
        print("  %-34s %6.0f → %6.0f s  %6.1f CPU-s" % (names[i], start_at[i], done_at[i], cpu[i]))
    # The largest unit on the path: when it starts, what it costs, how much of it is frontend.
    big = max(path, key=lambda i: cpu[i])
    fr = front[big] or 0.0
    print("largest on the critical path: %s, %.0f CPU-s (frontend %.0f, one core; the rest %.0f), "
          "starts at %.0f s, %.0f s before the end" % (names[big], cpu[big], fr, cpu[big] - fr, start_at[big], t - start_at[big]))


if __name__ == "__main__":
    main()
