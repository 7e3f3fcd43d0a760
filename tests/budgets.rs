//! Budgets are enforced by the host; a trial that hits one ends as
//! `deadline` / `budget` and is graded on what it did.

use crate::common::*;

/// The suite, with `DEADLINE` for its trials' deadline and `CASES` for the ids
/// of the cases it declares.
const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "budgets",
  budget = { deadline_s = DEADLINE, max_tool_calls = 3, max_turns = 2 },
  agent = evalua.agent.scripted(function(task, env)
    if task.case == "spins" then env.call("noop", {}) while true do end end
    if task.case == "spins_in_tool" then env.call("spin", {}) return "unreachable" end
    if task.case == "many_calls" then for i = 1, 10 do env.call("noop", { i = i }) end return "done" end
    if task.case == "chatty" then for i = 1, 5 do env.say("turn " .. i) end return "done" end
    if task.case == "crashes" then env.call("noop", {}) error("agent bug") end
    if task.case == "asks_user" then
      local a = env.say("postal code?")
      local b = env.say("anything else?")
      return "user said " .. tostring(a) .. " / " .. tostring(b)
    end
  end),
}
suite:tool { name = "noop", run = function() return {} end }
suite:tool { name = "spin", run = function() while true do end end }
local graded = { name = "graded on what it did", run = function(t) return #t.calls >= 1, { calls = #t.calls } end }
local cases = {
  spins = { input = "x", expect = { graded } },
  spins_in_tool = { input = "x", expect = { graded } },
  many_calls = { input = "x", expect = { check.max_calls(3) } },
  chatty = { input = "x", expect = { function(t) return true end } },
  crashes = { input = "x", expect = { graded } },
  asks_user = { input = "x", user = evalua.user.script { "28013" },
    expect = { check.answer { equals = "user said 28013 / nil" } } },
}
for _, id in ipairs(CASES) do local c = cases[id]; c.id = id; suite:case(c) end
return suite
"#;

/// Run the suite with these cases and deadline; its records. A run that does
/// not end within `PATIENCE` fails the test.
fn run(deadline_s: u32, cases: &[&str]) -> (tempfile::TempDir, Vec<serde_json::Value>) {
    let ids: Vec<String> = cases.iter().map(|c| format!("{c:?}")).collect();
    let suite =
        SUITE.replace("DEADLINE", &deadline_s.to_string()).replace("CASES", &format!("{{ {} }}", ids.join(", ")));
    let dir = project(&[("budgets.lua", &suite)]);
    let out = output_within(
        bin().current_dir(dir.path()).args(["run", "budgets.lua", "--out", "out", "-q", "--jobs", "3"]),
        PATIENCE,
    );
    assert!(out.status.code() == Some(0), "{}{}", stdout(&out), stderr(&out));
    let recs = trials(&dir.path().join("out"));
    (dir, recs)
}

#[test]
fn budgets_end_trials_and_they_are_still_graded() {
    // A spinning agent is stopped by its deadline, whatever the load: it made
    // its one call long before. (The run would hang without the deadline.)
    let (_spin_dir, recs) = run(5, &["spins"]);
    let spins = record(&recs, "spins", 1);
    assert_eq!(spins["ended"], "deadline");
    assert_eq!(spins["outcome"], "accepted", "graded on what it did: {spins}");

    // The other budgets end their trials on their own, before a deadline far
    // above what they need (on a busy machine a handler's own limits can take
    // seconds to trip).
    let (dir, recs) = run(300, &["spins_in_tool", "many_calls", "chatty", "crashes", "asks_user"]);
    // A handler stuck in a loop is stopped by the tool's own limit: the call
    // fails and the agent goes on.
    let spins_tool = record(&recs, "spins_in_tool", 1);
    assert_eq!(spins_tool["calls"]["failed"], 1);
    assert_eq!(spins_tool["answer"], "unreachable");
    let trace = trace_of(&dir.path().join("out"), spins_tool);
    assert!(trace["calls"][0]["error"].as_str().unwrap().contains("spin handler stopped"), "{}", trace["calls"][0]);

    let many = record(&recs, "many_calls", 1);
    assert_eq!(many["ended"], "budget");
    assert_eq!(many["calls"]["executed"], 3);
    assert_eq!(many["calls"]["denied"], 1, "the call over the budget is recorded as denied");
    assert!(many["error"].as_str().unwrap().contains("max_tool_calls"));

    let chatty = record(&recs, "chatty", 1);
    assert_eq!(chatty["ended"], "budget");
    assert!(chatty["error"].as_str().unwrap().contains("max_turns"));

    let crashes = record(&recs, "crashes", 1);
    assert_eq!(crashes["ended"], "crashed");
    assert!(crashes["error"].as_str().unwrap().contains("agent bug"));
    // Graded (its check passed), but a crash is never accepted (issue 43).
    assert_eq!(check(crashes, "graded on what it did")["passed"], true, "{crashes}");
    assert_eq!(crashes["outcome"], "failed");

    let asks = record(&recs, "asks_user", 1);
    assert_eq!(asks["outcome"], "accepted", "{asks}");
    let trace = trace_of(&dir.path().join("out"), asks);
    let roles: Vec<&str> = trace["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "agent", "user", "agent", "agent"]);
}
