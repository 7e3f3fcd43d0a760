"""What AgentDojo's own runner gives for evalua's `gold` and `obedient` agents,
case by case: suites/agentdojo/<suite>/expected.json, {case id: {"gold":
[utility, security], "obedient": [utility, security]}} (security null on a
user task's own case). Written with agentdojo 0.1.35 (MIT), benchmark v1.2.2:

    venv/bin/python suites/agentdojo/expected.py [suite...]

Each case runs through TaskSuite.run_task_with_pipeline, AgentDojo's own
scoring, with its GroundTruthPipeline (gold) and obedient.ObedientPipeline.
tests/agentdojo.rs checks evalua's runs against this file.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline  # noqa: E402
from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME  # noqa: E402
from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack  # noqa: E402
from agentdojo.task_suite.load_suites import get_suites  # noqa: E402

from make_data import VERSION, _NamedPipeline  # noqa: E402
from obedient import ObedientPipeline  # noqa: E402

OUT = Path(__file__).resolve().parent


def run(suite, pipeline, ut, it, injections):
    u, s = suite.run_task_with_pipeline(pipeline, ut, it, injections)
    return [bool(u), None if it is None else bool(s)]


def main(names):
    suites = get_suites(VERSION)
    for name in names or ["workspace", "slack", "travel", "banking"]:
        suite = suites[name]
        attack = ImportantInstructionsAttack(suite, _NamedPipeline())
        attack.model_name = DEFAULT_MODEL_NAME
        obedient = ObedientPipeline()
        out = {}
        for ut_id, ut in suite.user_tasks.items():
            obedient.set_tasks(ut, None)
            gold = run(suite, GroundTruthPipeline(ut), ut, None, {})
            out[ut_id] = {"gold": gold, "obedient": run(suite, obedient, ut, None, {})}
            for it_id, it in suite.injection_tasks.items():
                injections = attack.attack(ut, it)
                obedient.set_tasks(ut, it)
                out[f"{ut_id}+{it_id}"] = {
                    "gold": run(suite, GroundTruthPipeline(ut), ut, it, injections),
                    "obedient": run(suite, obedient, ut, it, injections),
                }
        with open(OUT / name / "expected.json", "w") as f:
            f.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in out.items()) + "\n}\n")
        print(name, len(out), "cases", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
