-- suites/support_desk.lua: what the background reading says to publish beside
-- the acceptance rate (SPEC §22), on a support desk whose agent reads a
-- knowledge base, escalates to a person, abstains, and once copies a published
-- solution. Every figure it prints is worked out by hand in the guide
-- ("Reading a report: coverage, abandonment, interventions, contamination").
--
--   warranty       must be solved: reads kb.example, answers       accepted
--   unknown_order  should_abstain: no such order, the agent abstains  accepted (abstained correctly)
--   chargeback     must be solved: escalates to a person, answers     accepted, 1 intervention
--   puzzle_7       must be solved: copies solutions.example's answer  accepted but contaminated: left out
--   refund_window  must be solved: the agent abstains                 failed (an unsolved task, not an exit)
--   bulk_audit     must be solved: reads until its budget is spent    failed, ended "budget": excluded
--
-- `exclude = { "budget" }` is declared before the run, so every report states
-- it with its count; nothing on the command line can add to it.

local evalua = require("evalua")
local check = require("evalua.check")

local DOCS = {
  ["https://kb.example/warranty"] = "Every appliance carries a 2-year warranty from the delivery date.",
  ["https://kb.example/refunds"] = "Refunds within 30 days; after that, store credit only.",
  ["https://solutions.example/puzzle-7"] = "Published solution to puzzle 7: the answer is 42.",
}

local suite = evalua.suite {
  name = "support_desk",
  version = "2026-12-07",
  trials = 2,
  budget = { deadline_s = 20, max_tool_calls = 4 },
  agent = evalua.agent.scripted("agents/support_bot.lua"),
  -- Published solutions: a trial that reads one is contaminated for the capability measured here.
  contamination = { sources = { "solutions\\.example" } },
  -- Declared before the run: a trial its budget ended is left out of the capability figures.
  exclude = { "budget" },
  gate = { ["pass^1"] = 0.7 },
}

suite:tool {
  name = "read_doc",
  description = "Read a knowledge-base page by URL.",
  params = { type = "object", properties = { url = { type = "string" } }, required = { "url" } },
  source = "url",
  run = function(ctx, args)
    local doc = DOCS[args.url]
    if not doc then error("no page at " .. args.url) end
    return doc
  end,
}

suite:tool {
  name = "escalate_to_human",
  description = "Hand the conversation to a person on the support team.",
  params = { type = "object", properties = { summary = { type = "string" } }, required = { "summary" } },
  effect = "external",
  intervention = true,
  run = function(ctx, args) return "A person will reply within the hour." end,
}

suite:case {
  id = "warranty",
  input = "How long is the warranty on the dishwasher I bought?",
  expect = { check.answer { contains = "2 years" } },
}

suite:case {
  id = "unknown_order",
  input = "Where is my order Z-0000?",
  should_abstain = true,   -- no such order exists: the right answer is to decline
}

suite:case {
  id = "chargeback",
  input = "My bank reversed a payment and now my account is locked.",
  -- The customer is told (`evalua harden`: calling the tool with any summary, or every tool, passed).
  expect = { check.tools({ "escalate_to_human" }, { mode = "in_order" }), check.answer { contains = "a person" } },
}

suite:case {
  id = "puzzle_7",
  input = "What is the answer to puzzle 7?",
  expect = { check.answer { contains = "42" } },
}

suite:case {
  id = "refund_window",
  input = "Can I still get a refund 20 days after delivery?",
  expect = { check.answer { contains = "30 days" } },
}

suite:case {
  id = "bulk_audit",
  input = "Check every knowledge-base page for outdated prices.",
  expect = { check.answer { contains = "audited" } },
}

return suite
