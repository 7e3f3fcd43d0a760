//! `evalua plan` (SPEC §20): the trials that detect a difference in pass^1,
//! against a hand calculation.

use crate::common::*;

const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "planned", trials = 4, agent = evalua.agent.scripted(function(task, env)
  if task.case == "half" and task.trial % 2 == 0 then return "no" end
  return "yes"
end) }
suite:case { id = "half", input = "x", expect = { check.answer { equals = "yes" } } }
suite:case { id = "always", input = "y", expect = { check.answer { equals = "yes" } } }
return suite
"#;

#[test]
fn plan_prints_the_trials_a_difference_needs_from_the_last_run() {
    let dir = project(&[("s.lua", SUITE)]);
    let o = evalua(dir.path(), &["plan", "s.lua", "--detect", "0.1"]);
    assert_user_error(&o, "no run of s.lua under runs/planned/");
    let run = evalua(dir.path(), &["run", "s.lua", "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // Rates 0.5 and 1.0: v̄ = (0.25 + 0) / 2 = 0.125; z = 1.959964 + 0.841621
    // = 2.801585, z² = 7.848879; 2 · 0.125 · 7.848879 / 0.01 = 196.2 → 197
    // trials; 2 cases → 99 each.
    let o = evalua(dir.path(), &["plan", "s.lua", "--detect", "0.1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("per-case rates from runs/planned/"), "{out}");
    assert!(out.contains("= 197 trials per run"), "{out}");
    assert!(out.contains("with the suite's 2 cases: 99 trials per case"), "{out}");
    let o = evalua(dir.path(), &["plan", "s.lua", "--detect", "0.2", "--assume", "0.5", "--power", "0.9"]);
    // 2 · 0.25 · (1.959964 + 1.281552)² / 0.04 = 131.3 → 132; 66 per case.
    assert!(stdout(&o).contains("= 132 trials per run"), "{}", stdout(&o));
    assert_user_error(&evalua(dir.path(), &["plan", "s.lua", "--detect", "1.5"]), "--detect must be between 0 and 1");
}
