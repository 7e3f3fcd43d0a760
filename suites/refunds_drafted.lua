-- suites/refunds_drafted.lua: the refunds shop, with cases drafted by a model
-- from suites/requirements/refunds.md (`evalua synth`, SPEC §23). The drafted
-- cases live in suites/synthetic/refunds.lua; each counts only once a person
-- has approved it (`evalua review`). Until then a run plays it and reports it
-- apart, out of every figure and gate. docs/guide.md walks it through
-- offline, with `evalua mock-judge suites/judges/refunds_drafts.rules.json`.

local evalua = require("evalua")
local shop   = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds_drafted",
  version = "2026-12-07",
  trials  = 3,
  budget  = { deadline_s = 30, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/refund_bot.lua"),
}

shop.tools(suite)
shop.cases(suite)
suite:cases(require("synthetic.refunds"))

return suite
