-- suites/orders_dataset.lua: cases from a dataset file.
--
-- data/orders.jsonl holds 1,000 customer questions about orders, one JSON
-- object a line; `suite:dataset` declares one case per row, through `map`.
-- The orders themselves are the sandbox's database (fixtures/orders.sql).
-- Both files come from data/make_orders.py.
--
-- The scripted bot finds an order id written "P-1234" or as a bare number;
-- it trips on a lowercase "p-1234", answers about the first of two orders,
-- and now and then (its seeded 3%) guesses without looking the order up.
--
--   evalua run suites/orders_dataset.lua
--   evalua list suites/orders_dataset.lua --tag two_orders
--   evalua run suites/orders_dataset.lua --case 'order_status_00*'

local evalua = require("evalua")
local check  = require("evalua.check")

local suite = evalua.suite {
  name    = "orders_dataset",
  version = "2026-12-01",
  trials  = 3,
  budget  = { deadline_s = 10, max_tool_calls = 4 },
  sandbox = { db = "sqlite", schema = "fixtures/orders.sql", clock = "2026-12-01T09:00:00Z" },
  agent   = evalua.agent.scripted(function(task, env)
    local id = task.input:match("P%-%d+")
    if not id then
      local digits = task.input:match("number (%d%d%d%d)")
      id = digits and ("P-" .. digits)
    end
    if not id then return "I could not find an order number in your message." end
    if env.random() < 0.03 then return "Order " .. id .. " has shipped." end
    local order, status = env.call("lookup_order", { order_id = id })
    if status ~= "ok" then return "I could not find order " .. id .. "." end
    return string.format("Order %s is %s (total %.2f).", order.id, order.status, order.total)
  end),
  gate    = { ["pass^1"] = 0.80 },
}

suite:tool {
  name = "lookup_order",
  description = "An order's status and total",
  params = { type = "object", properties = { order_id = { type = "string" } }, required = { "order_id" },
             additionalProperties = false },
  effect = "read",
  run = function(ctx, args)
    local o = ctx.db:all("SELECT id, status, total FROM orders WHERE id = ?", args.order_id)[1]
    if not o then error("no such order: " .. args.order_id) end
    return o
  end,
}

-- One case per row. `map` must depend on the row and its number alone: each
-- trial reads its row again and maps it.
suite:dataset("data/orders.jsonl", {
  map = function(row, i)
    return {
      id = row.id,
      input = row.question,
      tags = { row.style },
      difficulty = row.difficulty,
      expect = {
        check.answer { contains = " is " .. row.status, name = "states the status" },
        check.args("lookup_order", { order_id = row.order }),
        check.tools({ "lookup_order" }, { mode = "exact" }),
      },
    }
  end,
})

return suite
