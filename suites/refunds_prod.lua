-- suites/refunds_prod.lua: grade recorded production refund conversations.
--
--   evalua grade suites/refunds_prod.lua --traces tests/fixtures/traces/pydantic_ai/
--
-- Reads OpenTelemetry GenAI and OpenInference traces as they are, and the
-- team's own tracer (flat span lines with `acme.*` attributes) through
-- `trace_adapter`. Every item gets the four monitors; an item whose agent
-- span names a case (`evalua.case`) also gets that case's checks, and the
-- ones that need the final database are not applicable to a trace.
-- Flagged items become golden cases with `evalua promote` (see
-- suites/refunds_goldens.lua).

local evalua = require("evalua")
local shop   = require("shared.refunds_shop")
local json   = evalua.json

local suite = evalua.suite {
  name     = "refunds_prod",
  version  = "2026-11-29",
  sandbox  = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent    = evalua.agent.scripted("agents/refund_bot.lua"),
  monitors = shop.monitors(),
  -- At most 1 in 4 conversations may show a failure mode.
  gate     = { accepted = 0.75 },

  -- The home-grown tracer: `tool.<name>` spans carry the call, the `ticket`
  -- root the first user message and the last reply. Other acme spans (`turn`,
  -- `llm`) add nothing; spans of other tracers are read by the conventions.
  trace_adapter = function(span)
    local a = span.attributes
    if a["acme.tool"] then
      local failed = span.status == "error"
      return { call = {
        name   = a["acme.tool"],
        args   = json.decode(a["acme.args_json"]),
        result = a["acme.result_json"] and json.decode(a["acme.result_json"]) or a["acme.error"],
        status = failed and "failed" or "executed",
        error  = failed and a["acme.error"] or nil,
      } }
    elseif span.name == "ticket" then
      return { input = a["acme.user_input"], answer = a["acme.reply"] }
    elseif span.name == "llm" then
      return { usage = { input_tokens = a["acme.tokens_in"], output_tokens = a["acme.tokens_out"] } }
    elseif span.name == "turn" then
      return { skip = true }
    end
    return nil
  end,
}

shop.tools(suite)   -- the tools' effects (read / write / external), for checks that read them
shop.cases(suite)   -- traces exported by `evalua run --otlp` name their case

return suite
