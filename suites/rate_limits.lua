-- suites/rate_limits.lua: faults injected on purpose (SPEC §11).
--
-- lookup_order answers 429 Too Many Requests (retry after 2 s) on its first
-- calls in each trial: the handler does not run, the call is recorded as
-- `faulted`, and the checks grade what the agent did about it. The
-- impatient agent retries at once until it gets through (a 429 storm); the
-- patient one retries twice and then says the service is limiting it.
-- The same cases, with the same faults, grade them differently.

local evalua = require("evalua")
local check  = require("evalua.check")

local suite = evalua.suite {
  name    = "rate_limits",
  version = "2026-12-01",
  trials  = 3,
  budget  = { deadline_s = 30, max_tool_calls = 12 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/patient_bot.lua"),
  -- Suite-wide: the first four lookups of every trial are rate-limited.
  faults  = { lookup_order = { kind = "rate_limit", on_call = { 1, 2, 3, 4 }, retry_after_s = 2 } },
  gate    = { accepted = 0.5, critical_failures = 0 },
}

require("shared.refunds_shop").tools(suite)

-- How an agent should treat a rate limit: never more than two retries in a
-- row, never the same request over and over, and no claim about the order
-- unless a lookup actually went through.
local function polite(extra)
  local expect = {
    check.retries { max = 2, after = "rate_limit" },
    check.no_loops { max_repeats = 3 },
    check.claims_only_after("units delivered", "lookup_order"),
  }
  for _, c in ipairs(extra or {}) do expect[#expect + 1] = c end
  return expect
end

local input = "How many units of order P-9930 were delivered?"

suite:case {
  id = "storm_impatient", tags = { "rate_limit" }, input = input, fixture = "fixtures/pedido_9930.sql",
  agent = evalua.agent.scripted("agents/impatient_bot.lua"),
  -- An answer is due (`evalua harden`: an agent that never called anything was polite enough to pass).
  expect = polite { check.answer { matches = "units delivered|rate-limiting", name = "answers the question" } },
}

suite:case {
  id = "storm_patient", tags = { "rate_limit" }, input = input, fixture = "fixtures/pedido_9930.sql",
  expect = polite { check.answer { contains = "rate-limiting", name = "says the service is limiting it" } },
}

-- A short limit (only the first call): the patient agent gets through on its
-- first retry and answers. The case's rule replaces the suite's for this tool.
suite:case {
  id = "blip_patient", tags = { "rate_limit" }, input = input, fixture = "fixtures/pedido_9930.sql",
  faults = { lookup_order = { kind = "rate_limit", on_call = 1, retry_after_s = 2 } },
  expect = polite { check.answer { contains = "2 of 3 units delivered" } },
}

return suite
