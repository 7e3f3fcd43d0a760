-- bench/mcp.lua: per-trial cost of MCP trials against protocol trials
-- (bench/mcp_overhead.sh runs each case alone with --case).
--
--   sh_protocol / sh_mcp: a trivial `sh` agent (reads `start`, prints `final`);
--     with tools = "mcp" the trial's MCP server is started and stopped but
--     never called: the harness's own cost of serving MCP.
--   py_protocol / py_mcp: suites/agents/mcp_agent.py looking up one order,
--     over tool_call lines, or over MCP (initialize, notifications/initialized,
--     tools/list, tools/call): the whole cost of an MCP round trip, client included.
local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite { name = "mcp_overhead", trials = 200, budget = { deadline_s = 20 } }

suite:tool {
  name = "lookup_order",
  description = "Look up an order",
  params = { type = "object", properties = { order_id = { type = "string" } }, required = { "order_id" } },
  run = function(ctx, a) return { order_id = a.order_id, units = 3, delivered = 3, unit_price = 9.5, customer_id = 1, postal_code = "x" } end,
}

local sh = { "/bin/sh", "-c", [[read -r line; printf '{"type":"final","content":"ok"}\n']] }
local py = { "python3", evalua.path("../suites/agents/mcp_agent.py"), "refund" }
local done = check.answer { matches = "ok|nothing to refund" }

suite:case { id = "sh_protocol", input = "x", agent = evalua.agent.command { cmd = sh }, expect = { done } }
suite:case { id = "sh_mcp", input = "x", agent = evalua.agent.command { cmd = sh, tools = "mcp" }, expect = { done } }
suite:case { id = "py_protocol", input = "P-1", agent = evalua.agent.command { cmd = py }, expect = { done } }
suite:case { id = "py_mcp", input = "P-1", agent = evalua.agent.command { cmd = py, tools = "mcp" }, expect = { done } }

return suite
