-- suites/refunds_llm.lua: the refunds cases, played by a language model.
--
-- The tool loop runs in evalua (evalua.agent.openai): the model asks for
-- tools, the host executes them through the same executor as every agent,
-- usage and cost count against the budget. The suite runs when a model is
-- configured and is skipped (exit 0) otherwise:
--
--   EVALUA_OPENAI_BASE_URL=http://127.0.0.1:8080/v1 evalua run suites/refunds_llm.lua   # a local server
--   OPENAI_API_KEY=sk-... evalua run suites/refunds_llm.lua                           # OpenAI itself
--
-- EVALUA_OPENAI_MODEL names the model (default: gpt-4.1-mini, or "local" with
-- EVALUA_OPENAI_BASE_URL: a llama.cpp server answers with the model it loaded). See the README, "Model-driven
-- agents", for a local server with SmolLM2-135M.

local evalua = require("evalua")
local shop = require("shared.refunds_shop")

local configured = evalua.model_configured("openai")

local suite = evalua.suite {
  name    = "refunds_llm",
  version = "2026-11-29",
  trials  = 3,
  skip    = not configured
            and "no model configured: set EVALUA_OPENAI_BASE_URL (an OpenAI-compatible server) or OPENAI_API_KEY"
            or nil,
  budget  = { deadline_s = 120, max_tool_calls = 12, max_turns = 6, max_tokens = 60000, max_cost_usd = 0.20 },
  sandbox = { db = "sqlite", schema = "fixtures/shop.sql", clock = "2026-11-03T10:00:00Z" },
  agent   = evalua.agent.openai {
    -- A local server's model has no price: "local" keeps gpt-4.1-mini's off its tokens.
    model       = evalua.getenv("EVALUA_OPENAI_MODEL")
                  or (evalua.getenv("EVALUA_OPENAI_BASE_URL") and "local" or "gpt-4.1-mini"),
    system      = "prompts/refunds.md",
    temperature = 0,
    max_turns   = 10,
    max_tokens  = 256,
  },
  gate    = { critical_failures = 0 },
}

shop.tools(suite)
shop.cases(suite)

return suite
