"""bench/inspect/tasks.py: Inspect AI counterparts of bench/plain.lua and bench/agent.lua.

Two workloads, both on `mockllm/model` (no network, no API key), run by
bench/inspect/run.sh with `--no-log-samples`:

- plain: N samples (INSPECT_BENCH_SAMPLES, default 2,000) x 5 epochs. The
  model answers at once ("The answer is <n>." for "Question <n>"); scorer
  `includes()`, a contains check. The counterpart of bench/plain.lua: 2,000
  cases x 5 trials, a scripted agent answering at once, one check.answer{contains}.
- agent: 500 samples (INSPECT_BENCH_AGENT_SAMPLES) x 5 epochs. The scripted
  model calls lookup(item), then update(item), then answers; Inspect's
  generate() loop executes both tools. A custom scorer checks the sequence of
  executed tool calls in state.messages is exactly [lookup, update]. The
  counterpart of bench/agent.lua: 500 cases x 5 trials, a scripted agent
  making 2 tool calls, check.tools({"lookup", "update"}, {mode = "exact"}).

The model is scripted with mockllm's `custom_outputs` callable, which sees the
conversation so far: it plays the part of evalua's scripted agent.

    inspect eval bench/inspect/tasks.py@plain --model mockllm/model --no-log-samples
    inspect eval bench/inspect/tasks.py@agent --model mockllm/model --no-log-samples
"""

import os
import re

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, includes, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import tool

EPOCHS = int(os.environ.get("INSPECT_BENCH_EPOCHS", "5"))
MODEL = "mockllm/model"


# mockllm fills in token usage it was not given by counting tokens with
# tiktoken, whose encoding file is downloaded on first use (not reachable here,
# and not what this benchmark measures): every output carries its usage.
def with_usage(output: ModelOutput) -> ModelOutput:
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


# --- plain: answer at once, graded by a contains check ----------------------


def answer_at_once(input, tools, tool_choice, config):
    n = re.search(r"Question (\d+)", input[-1].text).group(1)
    return with_usage(ModelOutput.from_content(model=MODEL, content=f"The answer is {n}."))


@task
def plain(samples: int = int(os.environ.get("INSPECT_BENCH_SAMPLES", "2000"))):
    return Task(
        dataset=[Sample(id=i, input=f"Question {i}: what is the answer?", target=f"answer is {i}")
                 for i in range(1, samples + 1)],
        solver=generate(),
        scorer=includes(),
        model=get_model(MODEL, custom_outputs=answer_at_once),
        epochs=EPOCHS,
    )


# --- agent: lookup(item), update(item), answer; graded by the tool sequence --


@tool
def lookup():
    async def execute(item: str) -> str:
        """Look an item up.

        Args:
            item: The item's id.
        """
        return f"{item}: 5 units"

    return execute


@tool
def update():
    async def execute(item: str) -> str:
        """Remove one unit of an item from stock.

        Args:
            item: The item's id.
        """
        return f"{item}: 4 units"

    return execute


def two_tools_then_answer(input, tools, tool_choice, config):
    item = re.search(r"ITEM-\d+", input[0].text).group(0)
    done = sum(1 for m in input if isinstance(m, ChatMessageTool))
    if done == 0:
        return with_usage(ModelOutput.for_tool_call(MODEL, "lookup", {"item": item}))
    if done == 1:
        return with_usage(ModelOutput.for_tool_call(MODEL, "update", {"item": item}))
    return with_usage(ModelOutput.from_content(model=MODEL, content=f"{item} now has 4 units"))


@scorer(metrics=[accuracy()])
def tool_sequence(expected: list[str]):
    async def score(state: TaskState, target: Target) -> Score:
        called = [m.function for m in state.messages if isinstance(m, ChatMessageTool) and m.error is None]
        return Score(value=CORRECT if called == expected else INCORRECT, explanation=",".join(called))

    return score


@task
def agent(samples: int = int(os.environ.get("INSPECT_BENCH_AGENT_SAMPLES", "500"))):
    return Task(
        dataset=[Sample(id=i, input=f"Remove one unit of ITEM-{i:04d} from stock.") for i in range(1, samples + 1)],
        solver=[use_tools(lookup(), update()), generate()],
        scorer=tool_sequence(["lookup", "update"]),
        model=get_model(MODEL, custom_outputs=two_tools_then_answer),
        epochs=EPOCHS,
    )
