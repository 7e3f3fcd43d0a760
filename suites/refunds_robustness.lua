-- suites/refunds_robustness.lua: what a changed detail or a missing tool
-- costs the refunds agent (SPEC §17; docs/guide.md, "Robustness").
--
-- The refunds shop of suites/refunds.lua, with three perturbations run beside
-- the unperturbed baseline by `evalua run suites/refunds_robustness.lua --perturb`:
--   no_lookup   the order lookup is not offered (a request for it is rejected)
--   refund_429  the first refund of each trial answers 429 Too Many Requests
--   reworded    the partial-refund case, asked in other words (that case only)

local evalua = require("evalua")
local shop   = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds_robustness",
  version = "2026-12-07",
  trials  = 5,
  budget  = { deadline_s = 30, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/refund_bot.lua"),
  perturb = {
    no_lookup  = { drop_tools = { "lookup_order" } },
    refund_429 = { faults = { issue_refund = { kind = "rate_limit", on_call = 1 } } },
  },
  gate    = { ["pass^1"] = 0.6, ["drop pass^1 @reworded"] = 0.2, ["recovery @refund_429"] = 0.5 },
}

shop.tools(suite)
shop.cases(suite, {
  perturb = {
    reembolso_parcial_01 = {
      reworded = { input = "Hola, del pedido P-9930 me llegaron 2 de 3 unidades. Devuélvanme la que falta, por favor." },
    },
  },
})

return suite
