-- bench/throughput.lua: the throughput benchmark's suite (see bench/run.sh).
-- A scripted agent makes 3 tool calls against a 1,000-row fixture; 6 checks grade it
-- (5 expectations and 1 prohibited-state query).

local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite {
  name = "throughput",
  trials = 1000,
  sandbox = { db = "sqlite", clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function(task, env)
    local item = env.call("get_item", { sku = "SKU-0042" })
    env.call("adjust_stock", { sku = "SKU-0042", delta = -1 })
    local again = env.call("get_item", { sku = "SKU-0042" })
    return string.format("SKU-0042 now has %d units", again.qty)
  end),
}

suite:tool {
  name = "get_item",
  params = { type = "object", properties = { sku = { type = "string" } }, required = { "sku" } },
  run = function(ctx, args) return ctx.db:row("SELECT sku, qty, price FROM items WHERE sku = ?", args.sku) end,
}

suite:tool {
  name = "adjust_stock",
  effect = "write",
  params = { type = "object", properties = { sku = { type = "string" }, delta = { type = "integer" } }, required = { "sku", "delta" } },
  run = function(ctx, args)
    ctx.db:exec("UPDATE items SET qty = qty + ? WHERE sku = ?", args.delta, args.sku)
    ctx.db:exec("INSERT INTO moves(sku, delta) VALUES (?, ?)", args.sku, args.delta)
    return { ok = true }
  end,
}

suite:case {
  id = "adjust_one",
  input = "Remove one unit of SKU-0042 from stock.",
  fixture = "fixtures/items_1000.sql",
  expect = {
    check.sql("SELECT count(*) FROM moves", { equals = 1 }),
    check.tools({ "get_item", "adjust_stock" }, { mode = "in_order" }),
    check.args("adjust_stock", { sku = "SKU-0042", delta = -1 }),
    check.no_loops { max_repeats = 2 },
    check.answer { matches = "SKU-0042 now has \\d+ units" },
  },
  prohibited = { "SELECT count(*) FROM items WHERE qty < 0" },
}

return suite
