-- τ-bench's retail domain (sierra-research/tau-bench at 59a200c, MIT
-- licence: taubench/LICENSE) as an evalua suite: each task of
-- retail/tasks_test.json is case task_<index> (split held_out, the tasks the
-- leaderboard reports), each of retail/tasks_dev.json case dev_<index>
-- (split dev). See taubench/README.md.
--
--   evalua run suites/taubench/retail.lua --split held_out      # the gold agent on the 115 test tasks
--   evalua run suites/taubench/retail.lua --agent model --split held_out --trials 4

local taubench = require("lib.taubench")

return taubench.suite {
  domain = "retail",
  tools = require("lib.retail"),
  info = require("retail.tools_info"),
  datasets = {
    { file = "retail/tasks_test.json", split = "held_out", prefix = "task_" },
    { file = "retail/tasks_dev.json", split = "dev", prefix = "dev_" },
  },
}
