-- bench/agent.lua: the agent workload of the side-by-side benchmark with Inspect AI
-- (bench/compare_inspect.sh; the Inspect side is bench/inspect/tasks.py@agent).
-- 500 cases (EVALUA_BENCH_CASES) × 5 trials; a scripted agent calls
-- lookup(item), then update(item), then answers; check.tools with mode "exact"
-- grades the sequence of executed calls. The tools touch no database, as
-- Inspect's do not.

local evalua = require("evalua")
local check = require("evalua.check")

local n = tonumber(evalua.getenv("EVALUA_BENCH_CASES") or "500")

local suite = evalua.suite {
  name = "bench_agent",
  trials = 5,
  agent = evalua.agent.scripted(function(task, env)
    local item = task.input:match("ITEM%-%d+")
    env.call("lookup", { item = item })
    env.call("update", { item = item })
    return item .. " now has 4 units"
  end),
}

local params = { type = "object", properties = { item = { type = "string" } }, required = { "item" } }

suite:tool {
  name = "lookup",
  description = "Look an item up.",
  params = params,
  run = function(ctx, args) return args.item .. ": 5 units" end,
}

suite:tool {
  name = "update",
  description = "Remove one unit of an item from stock.",
  effect = "write",
  params = params,
  run = function(ctx, args) return args.item .. ": 4 units" end,
}

for i = 1, n do
  suite:case {
    id = "item_" .. i,
    input = string.format("Remove one unit of ITEM-%04d from stock.", i),
    expect = { check.tools({ "lookup", "update" }, { mode = "exact" }) },
  }
end

return suite
