-- suites/refunds_judged.lua: the partial refund, graded also by an LLM judge.
--
-- The state checks decide what rules can (one refund of 19.90, one email); a
-- rubric judges what they cannot (what the reply tells the customer), and a
-- pairwise check compares the reply with a reference. Without a reachable
-- judge model the two judge checks are *skipped* (counted, never passed):
--
--   evalua run suites/refunds_judged.lua                                   # judges skipped
--   OPENAI_API_KEY=sk-... evalua run suites/refunds_judged.lua --require-judge
--   EVALUA_OPENAI_BASE_URL=http://127.0.0.1:8080/v1 EVALUA_JUDGE_MODEL=smollm2 evalua run suites/refunds_judged.lua
--   evalua calibrate suites/refunds_judged.lua --labels suites/labels/refunds_judged.jsonl
--
-- No model? An offline judge answering from rules (one flaw on purpose, which calibrate finds):
--   evalua mock-judge suites/judges/refunds_judged.rules.json &
--   EVALUA_OPENAI_BASE_URL=http://127.0.0.1:8799/v1 evalua calibrate suites/refunds_judged.lua --labels suites/labels/refunds_judged.jsonl

local evalua = require("evalua")
local check  = require("evalua.check")
local judge  = require("evalua.judge")
local shop   = require("shared.refunds_shop")

local J = judge.model { model = evalua.getenv("EVALUA_JUDGE_MODEL") or "gpt-4.1-mini", temperature = 0, max_tokens = 600 }

local suite = evalua.suite {
  name    = "refunds_judged",
  version = "2026-11-29",
  trials  = 3,
  budget  = { deadline_s = 60, max_tool_calls = 12, max_turns = 6 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.scripted("agents/refund_bot.lua"),
  gate    = { critical_failures = 0 },
}

shop.tools(suite)

suite:case {
  id = "reembolso_parcial_judged", tags = { "refund", "judged" }, difficulty = "easy",
  input = "El cliente 4821 recibió 2 de las 3 unidades del pedido P-9930. Reembolsa la unidad que falta y avisa al cliente.",
  fixture = "fixtures/pedido_9930.sql",
  expect = {
    check.sql("SELECT importe FROM reembolsos WHERE pedido = 'P-9930'", { equals = 19.90, tolerance = 0.005 }),
    check.outbox { to = 4821, count = 1, name = "one email to the customer" },
    judge.rubric {
      "The final reply states the refunded amount (19.90 EUR)",
      "The final reply does not promise anything beyond the refund of the missing unit",
      name = "reply", model = J,
    },
    judge.pairwise {
      b = "Reembolsados 19,90 € del pedido P-9930 por la unidad que faltaba; le hemos avisado por correo.",
      question = "Which reply tells the customer more clearly what was refunded and why?",
      name = "clearer than the reference", model = J,
    },
  },
  prohibited = { "SELECT count(*) FROM reembolsos WHERE pedido <> 'P-9930'" },
}

return suite
