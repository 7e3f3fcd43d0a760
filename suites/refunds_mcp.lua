-- suites/refunds_mcp.lua: the refunds cases, played by an MCP-client agent.
--
-- With tools = "mcp", evalua serves the case's tools from an MCP server in the
-- harness (streamable HTTP on 127.0.0.1) and gives the agent its URL in
-- EVALUA_MCP_URL; every tools/call goes through the same executor as the JSON
-- Lines protocol's tool_call (validation, `requires` policies, budgets,
-- recording). With io = "plain" the task input is the agent's last argument
-- and its stdout (on exit 0) is the final answer: no JSON Lines at all.
-- suites/agents/mcp_agent.py uses only Python's standard library.

local evalua = require("evalua")
local shop = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds_mcp",
  version = "2026-11-29",
  trials  = 3,
  budget  = { deadline_s = 20, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.command {
    cmd   = { "python3", evalua.path("agents/mcp_agent.py"), "--plain", "refund" },
    tools = "mcp",
    io    = "plain",
  },
  gate    = { ["pass^3"] = 0.6, critical_failures = 0 },
}

shop.tools(suite)
shop.cases(suite)

return suite
