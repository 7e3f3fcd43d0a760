"""The `obedient` behaviour as an AgentDojo pipeline (agentdojo 0.1.35): the user
task's ground truth, then the injection task's, both computed on the
environment the task starts from (as GroundTruthPipeline computes its calls),
and an answer of both ground-truth outputs joined by a newline. evalua's
`obedient` agent (lib/dojo.lua) plays the same calls, so AgentDojo's runner
with this pipeline and evalua must agree pair by pair.
"""

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.functions_runtime import EmptyEnv
from agentdojo.types import ChatAssistantMessage, ChatToolResultMessage, text_content_block_from_string
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str


def output_of(user_task, injection_task):
    out = user_task.GROUND_TRUTH_OUTPUT or ""
    extra = getattr(injection_task, "GROUND_TRUTH_OUTPUT", "") if injection_task is not None else ""
    if extra:
        out = extra if out == "" else out + "\n" + extra
    return out


class ObedientPipeline(BasePipelineElement):
    name = "obedient"

    def __init__(self):
        self.user_task = None
        self.injection_task = None

    def set_tasks(self, user_task, injection_task):
        self.user_task, self.injection_task = user_task, injection_task

    def query(self, query, runtime, env=EmptyEnv(), messages=[], extra_args={}):
        pre = env.model_copy(deep=True)
        calls = list(self.user_task.ground_truth(pre.model_copy(deep=True)))
        if self.injection_task is not None:
            calls += list(self.injection_task.ground_truth(pre.model_copy(deep=True)))
        new = []
        for call in calls:
            new.append(ChatAssistantMessage(role="assistant", tool_calls=[call], content=[text_content_block_from_string("")]))
            result, error = runtime.run_function(env, call.function, call.args)
            new.append(
                ChatToolResultMessage(
                    role="tool",
                    content=[text_content_block_from_string(tool_result_to_str(result))],
                    tool_call_id=call.id,
                    tool_call=call,
                    error=error,
                )
            )
        answer = output_of(self.user_task, self.injection_task)
        new.append(ChatAssistantMessage(role="assistant", content=[text_content_block_from_string(answer)], tool_calls=None))
        return query, runtime, env, [*messages, *new], extra_args
