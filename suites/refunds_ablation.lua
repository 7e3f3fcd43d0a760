-- suites/refunds_ablation.lua: what each component of a refunds agent is worth.
--
-- One agent, three variants, played in one interleaved run:
--
--   evalua run suites/refunds_ablation.lua --agent full --agent no_retry --agent no_memory
--
-- `full` retries a refund once after a 429 and remembers the order it looked
-- up; `no_retry` gives up on the first 429; `no_memory` looks the order up
-- again before the refund, for its price. The shop's payment service answers
-- 429 on a quarter of refund calls (a seeded fault), so retrying is worth
-- success, while memory is worth only calls: the references make that visible.

local evalua = require("evalua")
local check  = require("evalua.check")
local shop   = require("shared.refunds_shop")

--- A careful refunds agent with its components switchable.
local function refund_agent(components)
  return evalua.agent.scripted(function(task, env)
    local order_id = task.input:match("P%-%d+")
    local cached
    local function order()
      if cached and components.memory then return cached end
      local o, status, err = env.call("lookup_order", { order_id = order_id })
      if status ~= "ok" then error("cannot look the order up: " .. tostring(err)) end
      cached = o
      return o
    end

    local o = order()
    local missing = o.units - o.delivered
    if missing == 0 then
      return "El pedido " .. order_id .. " figura entregado completo; no corresponde ninguna devolución."
    end

    env.call("verify_identity", { customer_id = o.customer_id, postal_code = o.postal_code })
    o = order()   -- the price, for the refund
    local amount = math.floor(o.unit_price * missing * 100 + 0.5) / 100
    local _, status, err = env.call("issue_refund", { order_id = order_id, amount = amount })
    if status ~= "ok" and components.retry and tostring(err):find("429", 1, true) then
      _, status, err = env.call("issue_refund", { order_id = order_id, amount = amount })
    end
    if status ~= "ok" then return "No pude completar la devolución: " .. tostring(err) end
    env.call("send_email", {
      customer_id = o.customer_id,
      subject = "Reembolso del pedido " .. order_id,
      body = string.format("Le hemos reembolsado %.2f € por las unidades no entregadas.", amount),
    })
    return string.format("Reembolsados %.2f € del pedido %s; cliente avisado.", amount, order_id)
  end)
end

local suite = evalua.suite {
  name    = "refunds_ablation",
  version = "2026-12-02",
  trials  = 20,
  budget  = { deadline_s = 30, max_tool_calls = 16, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agents  = {
    full      = refund_agent { retry = true,  memory = true },
    no_retry  = refund_agent { retry = false, memory = true },
    no_memory = refund_agent { retry = true,  memory = false },
  },
  default_agent = "full",
  -- The payment service is busy on a quarter of the refund calls.
  faults  = { issue_refund = { kind = "rate_limit", probability = 0.25, retry_after_s = 0 } },
  gate    = {
    ["pass^1@full"] = 0.85,                      -- the agent itself
    ["delta pass^1 full-no_retry"] = 0.05,       -- retrying is worth success
    critical_failures = 0,
  },
}

shop.tools(suite)
-- Every variant is held to the reference: at most twice its calls.
shop.cases(suite, { references = true, also = { check.efficiency { max_ratio = 2 } } })

return suite
