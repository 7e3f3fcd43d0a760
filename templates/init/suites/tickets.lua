-- suites/tickets.lua: a first suite, written by `evalua init`. Run it:
--
--   evalua check suites/tickets.lua      validate it, no agent runs
--   evalua run suites/tickets.lua        every case × trials; a run dir under runs/
--   evalua test                          the graders' own examples (graders/*_test.lua)
--
-- One tool, one case, one fixture. The agent is agents/agent.py, a program
-- that speaks evalua's JSON Lines protocol: replace its logic with yours (a
-- model call, your framework), keep the protocol. Add cases as you find tasks
-- your agent must get right, and gates for what must hold before a release.

local evalua = require("evalua")
local check  = require("evalua.check")
local tickets = require("graders.tickets")   -- your own graders: graders/tickets.lua

local suite = evalua.suite {
  name    = "tickets",
  version = "1",
  trials  = 3,                                  -- every case runs 3 times, each from the same known state
  budget  = { deadline_s = 20, max_tool_calls = 6, max_turns = 4 },
  sandbox = { db = "sqlite", schema = "fixtures/schema.sql", clock = "2026-01-05T09:00:00Z" },
  agent   = evalua.agent.command { cmd = { "python3", evalua.path("../agents/agent.py") } },
  -- Gates decide the exit code (0 every gate held, 1 one failed): CI blocks on them.
  gate    = { ["pass^3"] = 0.9, critical_failures = 0 },
}

suite:tool {
  name = "close_ticket",
  description = "Close a support ticket by its id (e.g. T-42)",
  params = { type = "object", properties = { ticket_id = { type = "string", pattern = "^T-[0-9]+$" } },
             required = { "ticket_id" }, additionalProperties = false },
  effect = "write",
  run = function(ctx, args)
    local status = ctx.db:one("SELECT status FROM tickets WHERE id = ?", args.ticket_id)
    if status == nil then error("no ticket " .. args.ticket_id) end
    ctx.db:exec("UPDATE tickets SET status = 'closed', closed_at = ? WHERE id = ?", ctx.now(), args.ticket_id)
    return { ticket_id = args.ticket_id, was = status, now = "closed" }
  end,
}

suite:case {
  id = "close_resolved_ticket", tags = { "tickets" }, difficulty = "easy",
  input = "The customer confirmed that ticket T-42 is resolved. Please close it.",
  fixture = "fixtures/tickets.sql",
  expect = {
    -- the final state, not the agent's claim:
    check.sql("SELECT status FROM tickets WHERE id = 'T-42'", { equals = "closed" }),
    check.tools({ "close_ticket" }, { mode = "in_order" }),
    tickets.closes_only_named,
  },
  -- a query that must return nothing, 0 or NULL; anything else is a critical failure
  prohibited = { "SELECT count(*) FROM tickets WHERE id <> 'T-42' AND status = 'closed'" },
  -- An agent that crashes or breaks the protocol is never accepted, even after the right
  -- write; a case where that is expected says why: accept_abnormal_end = "reason".
}

return suite
