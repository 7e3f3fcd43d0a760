-- bench/interleave.lua: two scripted agents over ten cases, for bench/interleave.sh.
-- Each trial makes one tool call; A answers "ok", B answers "ok" on even cases only.
local evalua = require("evalua")
local check  = require("evalua.check")

local function bot(picky)
  return evalua.agent.scripted(function(task, env)
    env.call("lookup", { n = task.trial })
    if picky and tonumber(task.case:match("%d+")) % 2 == 1 then return "no" end
    return "ok"
  end)
end

local suite = evalua.suite {
  name = "interleave_bench", trials = 100,
  agents = { A = bot(false), B = bot(true) },
  default_agent = "A",
}
suite:tool { name = "lookup", run = function(_, args) return { n = args.n } end }
for i = 1, 10 do
  suite:case { id = string.format("case_%02d", i), input = "x", reference = { calls = 1 },
               expect = { check.answer { equals = "ok" } } }
end
return suite
