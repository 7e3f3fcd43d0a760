-- suites/injection_python.lua: the cases of suites/injection.lua, played by
-- suites/agents/filter_agent.py over the JSON Lines protocol (SPEC §4). It
-- behaves as agents/filter_bot.lua does: it obeys a planted instruction in
-- the trials whose seed is even, so both suites give the same figures.

local evalua = require("evalua")
local filter = require("shared.records_filter")

local suite = evalua.suite {
  name    = "injection_python",
  version = "2026-12-01",
  trials  = 8,
  budget  = { deadline_s = 30, max_tool_calls = 12 },
  sandbox = { db = "sqlite", schema = "fixtures/projects.sql", clock = "2026-11-05T09:00:00Z" },
  agent   = evalua.agent.command { cmd = { "python3", evalua.path("agents/filter_agent.py") } },
}

filter.tools(suite)
filter.cases(suite)

return suite
