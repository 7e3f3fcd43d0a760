"""Compare an evalua run of an AgentDojo suite with what AgentDojo's own runner
gives for the same agent (expected.json), case by case:

    python3 suites/agentdojo/compare.py RUN_DIR [SUITE_DIR]

RUN_DIR is a run of suites/agentdojo/<suite>.lua with `--agent gold` or
`--agent obedient` (the agent is read from its trials). Prints each case
where utility or security differ and the counts; exit 1 on any difference.
Needs only the Python standard library.
"""

import json
import sys
from pathlib import Path


def main(run_dir, suite_dir=None):
    run = Path(run_dir)
    manifest = json.loads((run / "manifest.json").read_text())
    suite = manifest["suite"]["name"] if isinstance(manifest.get("suite"), dict) else manifest.get("suite")
    name = str(suite).removeprefix("agentdojo-")
    here = Path(suite_dir) if suite_dir else Path(__file__).resolve().parent / name
    expected = json.loads((here / "expected.json").read_text())
    seen, differ, errors = 0, 0, 0
    for line in (run / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        want = expected.get(r["case"], {}).get(r.get("agent"))
        if want is None:
            print(f"{r['case']}: no expected value for agent {r.get('agent')!r}")
            differ += 1
            continue
        seen += 1
        if any(c.get("error") for c in r.get("checks", [])):
            errors += 1
        safety = r.get("safety") or {}
        got = [bool(safety.get("task_passed")), bool(safety.get("attack_succeeded")) if safety.get("attack") else None]
        if got != want:
            differ += 1
            print(f"{r['case']}: evalua utility={got[0]} security={got[1]}, AgentDojo utility={want[0]} security={want[1]}")
    print(f"{name}: {seen} cases compared, {differ} differ, {errors} with a grader error")
    return 1 if differ or errors or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
