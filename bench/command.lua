-- bench/command.lua: a trivial protocol agent (reads `start`, prints `final`),
-- for measuring the harness's overhead per command-agent trial (bench/command_overhead.sh).
local evalua = require("evalua")
local check = require("evalua.check")

local suite = evalua.suite {
  name = "command_overhead",
  trials = 500,
  agent = evalua.agent.command { cmd = { "/bin/sh", "-c", [[read -r line; printf '{"type":"final","content":"ok"}\n']] } },
}

suite:case { id = "trivial", input = "x", expect = { check.answer { equals = "ok" } } }

return suite
