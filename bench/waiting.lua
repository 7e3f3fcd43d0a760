-- bench/waiting.lua: trials that mostly wait, as an agent waiting on a model API
-- does (see bench/slurm.sh). A command agent reads its start line, sleeps
-- EVALUA_BENCH_SLEEP seconds (default 0.5) and answers; 10 cases.
local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite {
  name = "waiting",
  sandbox = { clock = "2026-11-03T10:00:00Z" },  -- a fixed clock: parts started at different times must merge
  trials = 10,
  agent = evalua.agent.command {
    cmd = { "sh", "-c", 'read -r line; sleep "${EVALUA_BENCH_SLEEP:-0.5}"; echo \'{"type":"final","content":"done"}\'' },
    env = { "EVALUA_BENCH_SLEEP" },
  },
}
for i = 1, 10 do
  suite:case { id = "wait_" .. i, input = "wait", expect = { check.answer { equals = "done" } } }
end
return suite
