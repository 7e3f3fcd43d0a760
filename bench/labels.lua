-- bench/labels.lua: a suite to label (bench/labels.sh). 100 cases x 2 trials;
-- odd trials answer without the amount (the check and the monitor fail),
-- every case has a two-criterion rubric (no judge reachable: skipped, but
-- its criteria are in the manifest, which is what the viewer offers).
local evalua = require("evalua")
local check = require("evalua.check")
local judge = require("evalua.judge")

local suite = evalua.suite {
  name = "labels_bench", trials = 2,
  agent = evalua.agent.scripted(function(task, env)
    if task.trial % 2 == 0 then return "Refunded 19.90 EUR for order " .. task.case.id .. ". Have a nice day." end
    return "Done."
  end),
  monitors = { amount_missing = check.answer { contains = "19.90" } },
}

for i = 1, 100 do
  suite:case {
    id = string.format("refund_%03d", i),
    input = "Refund the missing unit of order P-" .. (9000 + i) .. " and tell the customer.",
    expect = {
      check.answer { contains = "19.90", name = "states the amount" },
      judge.rubric { "The reply states the refunded amount", "The reply is polite", name = "reply",
                     model = judge.model { model = "judge-m" } },
    },
  }
end

return suite
