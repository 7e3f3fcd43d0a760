-- tests/suites/bugfix_invalid.lua: cases whose tests do not hold on the
-- initial tree, next to one that does. `evalua check`/`run` must report the
-- broken ones as invalid (exit 2) or, with --skip-invalid, run only the valid one.

local evalua = require("evalua")
local check  = require("evalua.check")
local tools  = require("evalua.tools")

local suite = evalua.suite {
  name    = "bugfix_invalid",
  trials  = 1,
  sandbox = { workdir = "../../suites/fixtures/calc_repo" },
  agent   = evalua.agent.scripted(function(task, env)
    local f = env.call("read_file", { path = "calc/ranges.py" })
    env.call("write_file", { path = "calc/ranges.py",
      content = (f.content:gsub("list%(range%(start, stop%)%)", "list(range(start, stop + 1))")) })
    return "fixed"
  end),
}
tools.register(suite, { only = { "read_file", "write_file" } })

local RUNNER = { "python3", "-m", "unittest" }
local HIDDEN = "../../suites/hidden_tests/bugfix/"

suite:case {
  id = "valid",
  input = "Fix inclusive_range.",
  expect = { check.tests { runner = RUNNER, inject = HIDDEN,
    fail_to_pass = { "tests.test_inclusive_range.InclusiveRangeTest.test_includes_stop" },
    pass_to_pass = { "tests.test_ranges.ClampTest.test_inside" } } },
}

-- Its FAIL_TO_PASS test already passes before any fix: it cannot show one.
suite:case {
  id = "already_passes",
  input = "Fix inclusive_range.",
  expect = { check.tests { runner = RUNNER, inject = HIDDEN,
    fail_to_pass = { "tests.test_ranges.ClampTest.test_inside" } } },
}

-- Its PASS_TO_PASS test fails before any change.
suite:case {
  id = "p2p_broken",
  input = "Fix inclusive_range.",
  expect = { check.tests { runner = RUNNER,
    fail_to_pass = { "tests.test_ranges.RangeTest.test_single" },
    pass_to_pass = { "tests.test_ranges.RangeTest.test_single" } } },
}

return suite
