-- bench/throughput_pg.lua: bench/throughput.lua on PostgreSQL (see bench/postgres.sh).
-- The same cases, agent, tools and checks; each trial gets its own database,
-- copied from a template loaded with fixtures/items_1000_pg.sql (the same rows
-- with PostgreSQL's DDL). Keep it in step with throughput.lua. Needs EVALUA_PG_URL.

local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite {
  name = "throughput_pg",
  trials = 20,
  sandbox = { db = "postgres", url_env = "EVALUA_PG_URL", clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function(task, env)
    local sku = task.input:match("SKU%-%d+")
    env.call("get_item", { sku = sku })
    env.call("adjust_stock", { sku = sku, delta = -1 })
    local again = env.call("get_item", { sku = sku })
    return string.format("%s now has %d units", sku, again.qty)
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
  params = { type = "object", properties = { sku = { type = "string" }, delta = { type = "integer" } },
             required = { "sku", "delta" } },
  run = function(ctx, args)
    ctx.db:exec("UPDATE items SET qty = qty + ? WHERE sku = ?", args.delta, args.sku)
    ctx.db:exec("INSERT INTO moves(sku, delta) VALUES (?, ?)", args.sku, args.delta)
    return { ok = true }
  end,
}

for i = 1, 100 do
  local sku = string.format("SKU-%04d", i * 7)
  suite:case {
    id = "adjust_" .. i,
    input = "Remove one unit of " .. sku .. " from stock.",
    fixture = "fixtures/items_1000_pg.sql",
    expect = {
      check.sql("SELECT count(*) FROM moves", { equals = 1 }),
      check.tools({ "get_item", "adjust_stock" }, { mode = "in_order" }),
      check.args("adjust_stock", { sku = sku, delta = -1 }),
      check.no_loops { max_repeats = 2 },
      check.answer { matches = sku .. [[ now has \d+ units]] },
    },
    prohibited = { "SELECT count(*) FROM items WHERE qty < 0" },
  }
end

return suite
