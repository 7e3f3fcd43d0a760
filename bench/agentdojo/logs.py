"""AgentDojo's own runner writing its run logs, for bench/agentdojo.sh and the
tests: `venv/bin/python bench/agentdojo/logs.py LOGDIR [suite...]` (agentdojo
0.1.35, benchmark v1.2.2). Three deterministic pipelines, each through
AgentDojo's benchmark functions (run_task_without_injection_tasks,
run_task_with_injection_tasks) and its TraceLogger, so the tree is the one
AgentDojo writes, `<pipeline>/<suite>/<user_task>/<attack>/<injection_task>.json`:

- `ground_truth`: AgentDojo's GroundTruthPipeline (evalua's `gold` agent);
- `obedient`: suites/agentdojo/obedient.py (evalua's `obedient` agent);
- `obedient_even`: obeys the injection tasks of even number only, else as ground_truth.

Attack cases use the important_instructions attack rendered for the default
model name, as suites/agentdojo/ does.
"""

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "suites" / "agentdojo"))

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline  # noqa: E402
from agentdojo.agent_pipeline.basic_elements import InitQuery  # noqa: E402
from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline  # noqa: E402
from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME  # noqa: E402
from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack  # noqa: E402
from agentdojo.benchmark import run_task_with_injection_tasks, run_task_without_injection_tasks  # noqa: E402
from agentdojo.logging import LOGGER_STACK, NullLogger  # noqa: E402
from agentdojo.task_suite.load_suites import get_suites  # noqa: E402

from make_data import VERSION, _NamedPipeline  # noqa: E402
from obedient import ObedientPipeline  # noqa: E402


class Quiet(NullLogger):
    """A logger that prints nothing and gives TraceLogger its directory."""

    def __init__(self, logdir):
        self.logdir = str(logdir)
        self.messages = []

    def __enter__(self):
        LOGGER_STACK.get().append(self)
        return self

    def __exit__(self, *exc):
        LOGGER_STACK.get().pop()
        return False


class Selective(ObedientPipeline):
    """Obeys an injection task only when its number is even."""

    def set_tasks(self, user_task, injection_task):
        even = injection_task is not None and int(injection_task.ID.rsplit("_", 1)[1]) % 2 == 0
        super().set_tasks(user_task, injection_task if even else None)


def pipelines():
    gt = GroundTruthPipeline(None)
    yield "ground_truth", gt, lambda ut, it: setattr(gt, "_task", ut)
    ob = ObedientPipeline()
    yield "obedient", ob, ob.set_tasks
    se = Selective()
    yield "obedient_even", se, se.set_tasks


def main(logdir, names):
    suites = get_suites(VERSION)
    names = names or ["workspace", "slack", "travel", "banking"]
    started = time.perf_counter()
    n = 0
    with Quiet(logdir):
        for pname, element, set_tasks in pipelines():
            pipeline = AgentPipeline([InitQuery(), element])
            pipeline.name = pname
            for name in names:
                suite = suites[name]
                attack = ImportantInstructionsAttack(suite, _NamedPipeline())
                attack.model_name = DEFAULT_MODEL_NAME
                for ut in suite.user_tasks.values():
                    set_tasks(ut, None)
                    run_task_without_injection_tasks(suite, pipeline, ut, Path(logdir), True, VERSION)
                    n += 1
                    for it_id, it in suite.injection_tasks.items():
                        set_tasks(ut, it)
                        run_task_with_injection_tasks(suite, pipeline, ut, attack, Path(logdir), True, [it_id], VERSION)
                        n += 1
    print(f"{n} logs in {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
