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
  -- Found by `evalua harden` (SPEC §19): changing nothing is rewarded on these two tasks.
  gold_noop = {
    task_12 = "its gold return_delivered_order_items leaves the database as it was",
    task_106 = "its gold exchange_delivered_order_items (item 7292993796 named twice) leaves the database as it was",
  },
}
