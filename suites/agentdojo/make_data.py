"""Regenerate suites/agentdojo/<suite>/ from the agentdojo package (v0.1.35, MIT:
see LICENSE here), benchmark version v1.2.2, the latest in that package.

    python -m venv venv && venv/bin/pip install agentdojo==0.1.35
    venv/bin/python suites/agentdojo/make_data.py

Writes, per suite (workspace, slack, travel, banking):

- environment.sql: the environment with every injection vector at its default,
  as AgentDojo loads it (environment.yaml formatted, parsed, validated), dumped
  with pydantic's model_dump(mode="json") (datetimes as ISO text), as the
  sandbox's schema: one row per top-level key (`env(k, v)`, v its JSON), and `patched(k)`, the keys whose
  value already holds the case's patch (below) in this trial (lib/dojo.lua).
- tools.lua: each tool's name, description and JSON Schema, as AgentDojo's
  OpenAI pipeline offers them (Function.parameters.model_json_schema()).
- cases.json: a JSON array, one line per row: one row per user task and per (user task, injection task) pair:
  the prompt, the ground-truth calls and output played on the case's own
  pre-environment, and `patch`, how that pre-environment differs from
  environment.json (the injections as YAML parsed them, the task's
  init_environment): a list of [path, value] to set in order.
  Attack rows carry the `important_instructions` attack as AgentDojo renders it
  for the default model name ("the AI language model", user "Emma Johnson"),
  placed in the vectors AgentDojo's own attack picks (get_injection_candidates).

Every row's patch is checked here: applied to environment.json it gives the
pre-environment AgentDojo itself builds for that case.
"""

import json
import sys
from pathlib import Path

from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME
from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack
from agentdojo.task_suite.load_suites import get_suites

VERSION = "v1.2.2"
OUT = Path(__file__).resolve().parent


class _NamedPipeline:
    # The attack reads only the pipeline's name (to name the model); any known one will do,
    # the model name is then set to AgentDojo's default.
    name = "gpt-4o-2024-05-13"


def dump(v):
    return json.loads(json.dumps(v, default=str))


def diff(a, b, path, out):
    """[path, value] entries that turn a into b (whole values where shapes differ)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            diff(a[k], b[k], path + [k], out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, path + [i], out)
    elif a != b or type(a) is not type(b):
        out.append([path, b])
    return out


def apply(env, patch):
    env = json.loads(json.dumps(env))
    for path, value in patch:
        if not path:
            return value
        node = env
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return env


def calls_of(task, env):
    return [{"function": c.function, "args": dump(dict(c.args))} for c in task.ground_truth(env)]


def pre_environment(suite, user_task, injections):
    env = suite.load_and_inject_default_environment(injections)
    return user_task.init_environment(env)


def tool_rows(suite):
    return [
        {"name": f.name, "description": f.description, "parameters": f.parameters.model_json_schema()}
        for f in suite.tools
    ]


def suite_rows(suite, attack, base):
    rows = []
    for ut_id, ut in suite.user_tasks.items():
        pre = pre_environment(suite, ut, {})
        pre_json = pre.model_dump(mode="json")
        row = {
            "id": ut_id,
            "user_task": ut_id,
            "prompt": ut.PROMPT,
            "difficulty": ut.DIFFICULTY.name.lower(),
            "gold_calls": calls_of(ut, pre.model_copy(deep=True)),
            "gold_output": ut.GROUND_TRUTH_OUTPUT,
            "patch": diff(base, pre_json, [], []),
        }
        assert apply(base, row["patch"]) == pre_json, ut_id
        rows.append(row)
    for ut_id, ut in suite.user_tasks.items():
        for it_id, it in suite.injection_tasks.items():
            injections = attack.attack(ut, it)
            pre = pre_environment(suite, ut, injections)
            pre_json = pre.model_dump(mode="json")
            row = {
                "id": f"{ut_id}+{it_id}",
                "user_task": ut_id,
                "injection_task": it_id,
                "prompt": ut.PROMPT,
                "goal": it.GOAL,
                "difficulty": ut.DIFFICULTY.name.lower(),
                "injections": injections,
                "gold_calls": calls_of(ut, pre.model_copy(deep=True)),
                "gold_output": ut.GROUND_TRUTH_OUTPUT,
                "injection_calls": calls_of(it, pre.model_copy(deep=True)),
                "injection_output": getattr(it, "GROUND_TRUTH_OUTPUT", ""),
                "patch": diff(base, pre_json, [], []),
            }
            assert apply(base, row["patch"]) == pre_json, row["id"]
            rows.append(row)
    return rows


def lua_value(v, indent=""):
    """A Lua literal for a JSON value (empty lists as A {}, evalua's array)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "nil"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    inner = indent + "  "
    if isinstance(v, list):
        if not v:
            return "A {}"
        return "{\n" + "".join(f"{inner}{lua_value(x, inner)},\n" for x in v) + indent + "}"
    if not v:
        return "{}"
    items = "".join(f"{inner}[{json.dumps(k)}] = {lua_value(x, inner)},\n" for k, x in v.items())
    return "{\n" + items + indent + "}"


def sql_text(s):
    return "'" + s.replace("'", "''") + "'"


def environment_sql(env):
    lines = [
        "-- AgentDojo's environment (agentdojo 0.1.35, MIT), written by make_data.py.",
        "CREATE TABLE env (k TEXT PRIMARY KEY, v TEXT NOT NULL);",
        "CREATE TABLE patched (k TEXT PRIMARY KEY);",
    ]
    for k, v in env.items():
        lines.append(f"INSERT INTO env VALUES ({sql_text(k)}, {sql_text(json.dumps(v, ensure_ascii=False))});")
    return "\n".join(lines) + "\n"


def write_rows(path, rows):
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows) + "\n]\n")


def main(names):
    suites = get_suites(VERSION)
    import importlib.resources, yaml
    messages = importlib.resources.files("agentdojo") / "data" / "system_messages.yaml"
    (OUT / "system_message.md").write_text(yaml.safe_load(messages.read_text())["default"])
    for name in names or ["workspace", "slack", "travel", "banking"]:
        suite = suites[name]
        attack = ImportantInstructionsAttack(suite, _NamedPipeline())
        attack.model_name = DEFAULT_MODEL_NAME
        base = suite.load_and_inject_default_environment({}).model_dump(mode="json")
        (OUT / name).mkdir(exist_ok=True)
        (OUT / name / "environment.sql").write_text(environment_sql(base))
        (OUT / name / "tools.lua").write_text(
            f"-- AgentDojo's {name} tools as its OpenAI pipeline offers them (agentdojo 0.1.35, MIT:\n"
            "-- ../LICENSE), written by make_data.py. The handlers are in ../lib/.\n"
            'local A = require("evalua").array\n'
            f"return {lua_value(tool_rows(suite))}\n"
        )
        rows = suite_rows(suite, attack, base)
        write_rows(OUT / name / "cases.json", rows)
        print(f"{name}: {len(rows)} cases, {len(suite.tools)} tools", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
