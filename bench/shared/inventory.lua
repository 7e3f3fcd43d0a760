-- bench/shared/inventory.lua: the throughput benchmark's suite, for either
-- backend: 100 cases; in each trial a scripted agent makes 3 tool calls
-- against a 1,000-row fixture, and 6 checks grade it (5 expectations and 1
-- prohibited-state query). bench/throughput.lua (SQLite) and
-- bench/throughput_pg.lua (PostgreSQL) differ only in `opts`: the suite's
-- name, its sandbox and the cases' fixture (relative to the suite file).

local evalua = require("evalua")
local check = require("evalua.check")

local M = {}

--- The benchmark's two tools (an inventory table `items` and a `moves` log),
--- declared on `suite`: shared by every bench suite on items_1000.
function M.tools(suite)
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
end

--- One case: remove one unit of `sku`; the agent must look it up, then
--- adjust it by -1, once, and never drive a quantity negative.
function M.adjust_case(suite, id, sku, fixture)
  suite:case {
    id = id,
    input = "Remove one unit of " .. sku .. " from stock.",
    fixture = fixture,
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

--- The throughput suite: `opts` gives its name, sandbox and the cases' fixture.
function M.suite(opts)
  local suite = evalua.suite {
    name = opts.name,
    trials = 20,
    sandbox = opts.sandbox,
    agent = evalua.agent.scripted(function(task, env)
      local sku = task.input:match("SKU%-%d+")
      env.call("get_item", { sku = sku })
      env.call("adjust_stock", { sku = sku, delta = -1 })
      local again = env.call("get_item", { sku = sku })
      return string.format("%s now has %d units", sku, again.qty)
    end),
  }

  M.tools(suite)

  for i = 1, 100 do
    M.adjust_case(suite, "adjust_" .. i, string.format("SKU-%04d", i * 7), opts.fixture)
  end

  return suite
end

return M
