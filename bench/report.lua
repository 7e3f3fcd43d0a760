-- bench/report.lua: the report benchmark's suite (see bench/report_size.sh).
-- 500 cases × 5 trials; a scripted agent that is right about 70% of the time
-- (per-trial seeded math.random): it sometimes removes the wrong amount, loops,
-- or drives the stock negative (a prohibited state, so a critical failure).

local evalua = require("evalua")

local suite = evalua.suite {
  name = "report_bench",
  trials = 5,
  sandbox = { db = "sqlite", clock = "2026-11-03T10:00:00Z" },
  gate = { ["pass^5"] = 0.5, critical_failures = 0 },
  agent = evalua.agent.scripted(function(task, env)
    local sku = task.input:match("SKU%-%d+")
    local r = math.random()
    env.call("get_item", { sku = sku })
    if r < 0.08 then
      env.call("get_item", { sku = sku })
      env.call("get_item", { sku = sku })
    end
    local delta = -1
    if r >= 0.08 and r < 0.2 then delta = -2 elseif r >= 0.2 and r < 0.25 then delta = -1000 end
    env.call("adjust_stock", { sku = sku, delta = delta })
    local again = env.call("get_item", { sku = sku })
    return string.format("%s now has %d units", sku, again.qty)
  end),
}

local inventory = require("shared.inventory")
inventory.tools(suite)

for i = 1, 500 do
  local sku = string.format("SKU-%04d", i * 2)
  inventory.adjust_case(suite, string.format("adjust_stock_of_%s", sku), sku, "fixtures/items_1000.sql")
end

return suite
