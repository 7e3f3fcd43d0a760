"""AgentDojo's own scoring of its run logs, for bench/agentdojo.sh: each log's
recorded calls run again through AgentDojo's runner (TaskSuite.
run_task_with_pipeline, the pipeline replaying the log's tool calls), then its
utility and security functions decide: the same work `evalua grade --traces`
does with re-execution. Prints one JSON line per log and the time taken:

    venv/bin/python bench/agentdojo/score.py LOGDIR > scores.jsonl
"""

import json
import sys
import time
from pathlib import Path

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import EmptyEnv, FunctionCall
from agentdojo.task_suite.load_suites import get_suites
from agentdojo.types import ChatAssistantMessage, ChatToolResultMessage, text_content_block_from_string

VERSION = "v1.2.2"


def text(content):
    if isinstance(content, str):
        return content
    return "\n".join(b.get("content") or "" for b in content or [] if isinstance(b, dict))


class Replay(BasePipelineElement):
    """Plays a log's assistant messages back: its tool calls run on the environment."""

    name = "replay"

    def __init__(self, messages):
        self.messages = messages

    def query(self, query, runtime, env=EmptyEnv(), messages=[], extra_args={}):
        out = list(messages)
        for m in self.messages:
            if m.get("role") != "assistant":
                continue
            calls = [FunctionCall(function=c["function"], args=c.get("args") or {}) for c in m.get("tool_calls") or []]
            out.append(ChatAssistantMessage(role="assistant", tool_calls=calls or None,
                                            content=[text_content_block_from_string(text(m.get("content")))]))
            for call in calls:
                result, error = runtime.run_function(env, call.function, call.args)
                out.append(ChatToolResultMessage(role="tool", tool_call=call, tool_call_id=None, error=error,
                                                 content=[text_content_block_from_string(tool_result_to_str(result))]))
        if not out or out[-1]["role"] != "assistant":
            out.append(ChatAssistantMessage(role="assistant", tool_calls=None, content=[text_content_block_from_string("")]))
        return query, runtime, env, out, extra_args


def main(logdir):
    suites = get_suites(VERSION)
    started = time.perf_counter()
    n = 0
    for path in sorted(Path(logdir).rglob("*.json")):
        log = json.loads(path.read_text())
        suite = suites[log["suite_name"]]
        ut = suite.get_user_task_by_id(log["user_task_id"])
        it_id = log.get("injection_task_id")
        it = suite.get_injection_task_by_id(it_id) if it_id else None
        utility, security = suite.run_task_with_pipeline(Replay(log["messages"]), ut, it, log.get("injections") or {})
        n += 1
        print(json.dumps({"log": str(path.relative_to(logdir)), "utility": bool(utility),
                          "security": None if it is None else bool(security),
                          "recorded": [log.get("utility"), log.get("security") if it else None]}))
    print(f"{n} logs scored in {time.perf_counter() - started:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
