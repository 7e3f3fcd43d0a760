-- bench/plain.lua: the plain workload of the side-by-side benchmark with Inspect AI
-- (bench/compare_inspect.sh; the Inspect side is bench/inspect/tasks.py@plain).
-- N cases (EVALUA_BENCH_CASES, default 2,000) × 5 trials; a scripted agent
-- answers at once, and one check.answer { contains } grades it. No tools, no
-- database: what is measured is the harness's cost per trial.

local evalua = require("evalua")
local check = require("evalua.check")

local n = tonumber(evalua.getenv("EVALUA_BENCH_CASES") or "2000")

local suite = evalua.suite {
  name = "bench_plain",
  trials = 5,
  agent = evalua.agent.scripted(function(task, env)
    return "The answer is " .. task.input:match("Question (%d+)") .. "."
  end),
}

for i = 1, n do
  suite:case {
    id = "q" .. i,
    input = "Question " .. i .. ": what is the answer?",
    expect = { check.answer { contains = "answer is " .. i } },
  }
end

return suite
