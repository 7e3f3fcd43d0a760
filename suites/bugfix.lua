-- suites/bugfix.lua: grading a coding agent the SWE-bench way.
--
-- The repository (fixtures/calc_repo, a small Python package) has an
-- off-by-one bug: inclusive_range(start, stop) leaves out `stop`. Each trial
-- gets its own copy of the repository; the agent works on it with the
-- evalua.tools kit. Grading runs on copies of the final tree:
--
--   * hidden tests (hidden_tests/bugfix/, never in the agent's tree) must go
--     from failing to passing (FAIL_TO_PASS) and the unrelated tests must
--     keep passing (PASS_TO_PASS), one `python3 -m unittest <id>` per test;
--   * the change must stay in calc/ (editing the tests is a critical failure);
--   * no credential may appear in the change, the answer or any tool argument.
--
-- Before the first trial, `evalua run` / `evalua check` verify on the initial
-- tree that each FAIL_TO_PASS test fails and each PASS_TO_PASS test passes.

local evalua = require("evalua")
local check  = require("evalua.check")
local tools  = require("evalua.tools")

local suite = evalua.suite {
  name    = "bugfix",
  version = "2026-11-29",
  trials  = 8,
  budget  = { deadline_s = 60, max_tool_calls = 20 },
  sandbox = { workdir = "fixtures/calc_repo" },
  agent   = evalua.agent.scripted("agents/bugfix_bot.lua"),
}

tools.register(suite, { run = { timeout_s = 20 } })

suite:case {
  id = "inclusive_range_off_by_one",
  tags = { "python", "bugfix" },
  difficulty = "easy",
  input = "Bug: calc.inclusive_range(start, stop) should include `stop` "
       .. "(inclusive_range(3, 3) == [3]) but leaves it out. Fix it; keep the other helpers working.",
  expect = {
    check.tests {
      runner = { "python3", "-m", "unittest" },
      inject = "hidden_tests/bugfix/",
      fail_to_pass = { "tests.test_inclusive_range.InclusiveRangeTest.test_includes_stop" },
      pass_to_pass = {
        "tests.test_inclusive_range.InclusiveRangeTest.test_empty_when_reversed",
        "tests.test_ranges.ClampTest.test_inside",
        "tests.test_ranges.ClampTest.test_edges",
        "tests.test_ranges.ChunksTest.test_chunks",
      },
      timeout_s = 30,
    },
    check.command { name = "visible tests", cmd = { "python3", "-m", "unittest", "-q" }, timeout_s = 30 },
    check.scope { allowed = { "calc/**" }, forbidden = { "tests/**", ".github/**" }, critical = true },
    check.no_secrets { env = { "API_TOKEN" }, patterns = { "sk-live-[A-Za-z0-9]{16,}" }, critical = true },
  },
}

return suite
