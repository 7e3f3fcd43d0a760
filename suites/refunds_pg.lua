-- suites/refunds_pg.lua: suites/refunds.lua on PostgreSQL.
--
-- The same tools, cases, checks and scripted agent (suites/shared/refunds_shop.lua);
-- only the sandbox differs: each trial gets its own PostgreSQL database, copied
-- from a template database loaded with fixtures/shop_pg.sql and the case's
-- fixture, and dropped after grading. With the same seed it gives the same
-- verdicts as refunds.lua. It needs a server whose URL is in EVALUA_PG_URL
-- (a role that may CREATE DATABASE) and is skipped (exit 0) without one:
--
--   EVALUA_PG_URL=postgres://postgres@127.0.0.1:5432/postgres evalua run suites/refunds_pg.lua

local evalua = require("evalua")
local shop = require("shared.refunds_shop")

local suite = evalua.suite {
  name    = "refunds_pg",
  version = "2026-11-29",
  trials  = 5,
  skip    = not evalua.postgres_configured("EVALUA_PG_URL")
            and "no PostgreSQL server: set EVALUA_PG_URL (e.g. postgres://user@127.0.0.1:5432/postgres)"
            or nil,
  budget  = { deadline_s = 30, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "postgres", url_env = "EVALUA_PG_URL", schema = "fixtures/shop_pg.sql",
              clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/refund_bot.lua"),
  gate    = { ["pass^3"] = 0.5, critical_failures = 0, grader_errors = 0 },
  monitors = shop.monitors(),
}

shop.tools(suite)
shop.cases(suite)

return suite
