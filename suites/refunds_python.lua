-- suites/refunds_python.lua: the refunds cases, played by a real program.
--
-- suites/agents/refund_agent.py speaks the JSON Lines protocol (SPEC §4) over
-- stdin/stdout using only Python's standard library; evalua runs it once per
-- trial in a fresh work dir with a scrubbed environment. It refunds what was
-- not delivered; on the order delivered in full its refund of 0 is rejected
-- by the tool's schema (exclusiveMinimum) and it reports that it failed.

local evalua = require("evalua")
local shop = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds_python",
  version = "2026-11-29",
  trials  = 3,
  budget  = { deadline_s = 20, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.command { cmd = { "python3", evalua.path("agents/refund_agent.py") } },
  gate    = { ["pass^3"] = 0.6, critical_failures = 0 },
}

shop.tools(suite)
shop.cases(suite)

return suite
