-- suites/refunds.lua: partial refunds in a shop.
--
-- Customer 4821 received 2 of the 3 units of order P-9930. The right outcome
-- is a refund of exactly one unit's price and exactly one email to that
-- customer; a refund on any other order is prohibited; issue_refund requires
-- a successful verify_identity. The scripted agent is deliberately imperfect.

local evalua = require("evalua")
local shop   = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds",
  version = "2026-11-29",
  trials  = 5,
  budget  = { deadline_s = 30, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/refund_bot.lua"),
  gate    = { ["pass^3"] = 0.5, critical_failures = 0, grader_errors = 0 },
  -- Failure modes from production (see suites/refunds_prod.lua): named, counted, promoted.
  monitors = shop.monitors(),
}

shop.tools(suite)
shop.cases(suite)

return suite
