-- suites/refunds_goldens.lua: production failures as regression cases (the
-- trace → golden flywheel, SPEC §9).
--
--   evalua grade suites/refunds_prod.lua --traces tests/fixtures/traces/pydantic_ai/ --out runs/prod
--   evalua promote runs/prod --into suites/goldens/refunds.lua
--   evalua run suites/refunds_goldens.lua
--
-- `evalua promote` clusters the flagged production conversations by their
-- failure modes and tool sequence and keeps one case per cluster in
-- goldens/refunds.lua (versioned, deduplicated). Here each golden case runs
-- against the current agent from the full shop fixture; its trials must not
-- re-fire the failure modes it was promoted for.

local evalua = require("evalua")
local shop   = require("shared.refunds_shop")
local policy = require("graders.policy")

local suite = evalua.suite {
  name     = "refunds_goldens",
  version  = "2026-11-29",
  trials   = 3,
  budget   = { deadline_s = 30, max_tool_calls = 12, max_turns = 6 },
  sandbox  = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent    = evalua.agent.scripted("agents/refund_bot.lua"),
  monitors = shop.monitors(),
  gate     = { ["pass^3"] = 0.5, critical_failures = 0 },
}

shop.tools(suite)

suite:goldens(require("goldens.refunds"), {
  fixture = "fixtures/shop_prod.sql",
  expect  = { policy.identity_before_refund },
  -- SPEC §19: `evalua harden` finds that doing nothing passes every golden, by design.
  harden  = { skip = { "claim", "bystander", "everything", "wrong_args" },
              reason = "a golden asserts only that the failure modes it was promoted for do not re-fire: a production trace carries no gold outcome to check (refunds.lua grades the task itself)" },
})

return suite
