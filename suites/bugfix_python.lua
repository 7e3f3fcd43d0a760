-- suites/bugfix_python.lua: the bugfix case of suites/bugfix.lua, played by a
-- command agent (suites/agents/bugfix_agent.py) over the JSON Lines protocol.
-- The agent starts in its trial's copy of the repository and works through
-- the same evalua.tools kit; the grading is the same.

local evalua = require("evalua")
local check  = require("evalua.check")
local tools  = require("evalua.tools")

local suite = evalua.suite {
  name    = "bugfix_python",
  version = "2026-11-29",
  trials  = 2,
  budget  = { deadline_s = 60, max_tool_calls = 20 },
  sandbox = { workdir = "fixtures/calc_repo" },
  agent   = evalua.agent.command { cmd = { "python3", evalua.path("agents/bugfix_agent.py") }, cwd = "workdir" },
}

tools.register(suite, { run = { timeout_s = 20 } })

suite:case {
  id = "inclusive_range_off_by_one",
  tags = { "python", "bugfix" },
  input = "Bug: calc.inclusive_range(start, stop) should include `stop` "
       .. "(inclusive_range(3, 3) == [3]) but leaves it out. Fix it; keep the other helpers working.",
  expect = {
    check.tests {
      runner = { "python3", "-m", "unittest" },
      inject = "hidden_tests/bugfix/",
      fail_to_pass = { "tests.test_inclusive_range.InclusiveRangeTest.test_includes_stop" },
      pass_to_pass = {
        "tests.test_inclusive_range.InclusiveRangeTest.test_empty_when_reversed",
        "tests.test_ranges.ClampTest.test_edges",
        "tests.test_ranges.ChunksTest.test_chunks",
      },
    },
    check.scope { allowed = { "calc/**" }, forbidden = { "tests/**" }, critical = true },
    check.tools({ "read_file", "write_file", "run" }, { mode = "in_order" }),
  },
}

return suite
