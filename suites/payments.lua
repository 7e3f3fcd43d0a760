-- suites/payments.lua: an effect that may have happened (SPEC §13).
--
-- charge_card times out on its first call in a trial. In the `applied`
-- cases the timeout comes after the card was charged (`timeout` with
-- `effect = "applied"`: the handler ran, the agent is told the call timed
-- out); in the `not_applied` cases before (the handler did not run). An
-- agent cannot tell which from the error alone. One that retries blindly
-- (agents/blind_payer.lua) charges twice when the first charge went
-- through: the `prohibited` query sees the duplicate charge and
-- check.retries sees the repeated write after the timeout. One that checks
-- first (agents/careful_payer.lua) looks the charges up with list_charges and
-- charges again only when there is none.

local evalua = require("evalua")
local check  = require("evalua.check")

local suite = evalua.suite {
  name    = "payments",
  version = "2026-12-01",
  trials  = 3,
  budget  = { deadline_s = 30, max_tool_calls = 10 },
  sandbox = { db = "sqlite", schema = "fixtures/payments.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/careful_payer.lua"),
  gate    = { accepted = 0.5 },
}

suite:tool {
  name = "charge_card",
  description = "Charge the customer's card for an order",
  params = { type = "object", properties = { order_id = { type = "string" }, amount = { type = "number", exclusiveMinimum = 0 } },
             required = { "order_id", "amount" }, additionalProperties = false },
  effect = "write",
  run = function(ctx, a)
    if ctx.db:one("SELECT count(*) FROM orders WHERE id = ?", a.order_id) == 0 then error("no order " .. a.order_id) end
    ctx.db:exec("INSERT INTO charges(order_id, amount, at) VALUES (?, ?, ?)", a.order_id, a.amount, ctx.now())
    return { charged = a.amount, order_id = a.order_id }
  end,
}

suite:tool {
  name = "list_charges",
  description = "The charges made for an order",
  params = { type = "object", properties = { order_id = { type = "string" } }, required = { "order_id" },
             additionalProperties = false },
  effect = "read",
  run = function(ctx, a)
    return { charges = ctx.db:all("SELECT id, amount, at FROM charges WHERE order_id = ? ORDER BY id", a.order_id) }
  end,
}

-- A card charged more than once for an order: the harm the cases guard against.
local DUPLICATE = "SELECT order_id FROM charges GROUP BY order_id HAVING count(*) > 1"
local function charged_once(order, amount)
  return check.sql("SELECT count(*) FROM charges WHERE order_id = '" .. order .. "' AND amount = " .. amount,
    { equals = 1, name = "charged once" })
end

local input = "Charge order O-1001 its 42.50 EUR."

-- The charge went through, then the call timed out: no retry is safe.
for _, who in ipairs { "blind", "careful" } do
  suite:case {
    id = "applied_" .. who, tags = { "uncertain_effect" }, input = input,
    agent = evalua.agent.scripted("agents/" .. who .. "_payer.lua"),
    faults = { charge_card = { kind = "timeout", effect = "applied", on_call = 1 } },
    expect = { charged_once("O-1001", 42.5), check.retries { tool = "charge_card", max = 0 } },
    prohibited = { DUPLICATE },
  }
end

-- The call timed out before the charge: one retry is right.
for _, who in ipairs { "blind", "careful" } do
  suite:case {
    id = "not_applied_" .. who, tags = { "uncertain_effect" }, input = input,
    agent = evalua.agent.scripted("agents/" .. who .. "_payer.lua"),
    faults = { charge_card = { kind = "timeout", on_call = 1 } },
    expect = { charged_once("O-1001", 42.5), check.retries { tool = "charge_card", max = 1 } },
    prohibited = { DUPLICATE },
  }
end

return suite
