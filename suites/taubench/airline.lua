-- τ-bench's airline domain (sierra-research/tau-bench at 59a200c, MIT
-- licence: taubench/LICENSE) as an evalua suite: each task of
-- airline/tasks_test.json is case task_<index>. See taubench/README.md.
--
--   evalua run suites/taubench/airline.lua                      # the gold agent: every case accepted
--   evalua run suites/taubench/airline.lua --agent model --trials 4   # your model (EVALUA_OPENAI_BASE_URL, OPENAI_API_KEY)
--   evalua grade suites/taubench/airline.lua --traces results.json    # τ-bench's own results, re-executed

local taubench = require("lib.taubench")

return taubench.suite {
  domain = "airline",
  tools = require("lib.airline"),
  info = require("airline.tools_info"),
  datasets = { { file = "airline/tasks_test.json", split = "held_out", prefix = "task_" } },
}
