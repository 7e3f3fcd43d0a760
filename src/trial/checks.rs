//! Running checks on a finished trial's `t`, each under its own limits: the
//! case's checks and the suite's monitors, for a run's trials and for
//! recorded traces alike (`evalua grade`).

use std::time::{Duration, Instant};

use mlua::{Lua, MultiValue, Table, Value};
use serde_json::{Value as Json, json};

use crate::lua::api::{marks, t as tapi};
use crate::lua::engine::{self as lua, Segment, convert, limits::Guarded};
use crate::record::CheckResult;

/// Limits on one check.
const CHECK_INSTRUCTIONS: u64 = 50_000_000;
const CHECK_SECONDS: u64 = 10;

/// A check to run: its normalised Lua table (`{ name, critical, run }`).
pub struct CheckRun {
    pub table: Table,
    pub name: String,
    pub critical: bool,
    /// A monitor: its failure labels the trial with `name`.
    pub monitor: bool,
}

/// The suite's monitors (`_monitors` of the evaluated suite table), in name order.
pub fn monitors_of(suite_t: &Table) -> mlua::Result<Vec<CheckRun>> {
    let Some(list) = suite_t.get::<Option<Table>>("_monitors")? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for m in list.sequence_values::<Table>() {
        let m = m?;
        out.push(CheckRun { name: m.get("name")?, critical: m.get("critical")?, table: m, monitor: true });
    }
    Ok(out)
}

/// The names of the monitors that failed, in order.
pub fn failure_modes(results: &[CheckResult]) -> Vec<String> {
    results.iter().filter(|r| r.passed == Some(false)).filter_map(|r| r.monitor.clone()).collect()
}

/// The judges' model calls made since the last take, as `by = "judge"` model
/// calls, their `started_ms` counted from `start` plus `offset_ms`.
pub fn take_judge_calls(lua: &Lua, start: Instant, offset_ms: f64) -> Vec<crate::record::ModelCall> {
    let calls = lua.remove_app_data::<crate::judge::JudgeCalls>().unwrap_or_default();
    calls
        .0
        .into_iter()
        .map(|j| {
            let mut c = j.call;
            c.started_ms = offset_ms + j.started.saturating_duration_since(start).as_secs_f64() * 1000.0;
            c
        })
        .collect()
}

/// Run each check on `t`. A check that raises, hits a limit or returns
/// something else than a verdict is a grader error; one that reached for
/// state the trial does not have (`t.db` of a recorded trace) is not
/// applicable, whatever it returned.
///
/// Critical checks run first: a critical failure (a prohibited write, a
/// leak) is known before any slower check (a judge) runs. Results keep the
/// order of `checks`.
pub fn run_checks(lua: &Lua, checks: &[CheckRun], t: &Table) -> Vec<CheckResult> {
    let limits = lua::limits(lua);
    let mut order: Vec<usize> = (0..checks.len()).collect();
    order.sort_by_key(|&i| !checks[i].critical);
    let mut out: Vec<Option<CheckResult>> = vec![None; checks.len()];
    for i in order {
        let c = &checks[i];
        let run: mlua::Result<mlua::Function> = c.table.get("run");
        let seg = Segment {
            instructions: Some(CHECK_INSTRUCTIONS),
            deadline: Some(Instant::now() + Duration::from_secs(CHECK_SECONDS)),
        };
        tapi::take_state_needed(lua);
        let result = match run {
            Ok(f) => limits.guard(lua, seg, || f.call::<MultiValue>(t.clone())),
            Err(e) => Guarded::Done(Err(e)),
        };
        let mut r = CheckResult {
            name: c.name.clone(),
            critical: c.critical,
            monitor: c.monitor.then(|| c.name.clone()),
            ..Default::default()
        };
        match result {
            Guarded::Stopped(stop) => r.error = Some(format!("check stopped: {}", stop.describe())),
            Guarded::Done(Err(e)) => r.error = Some(lua::describe(&e)),
            Guarded::Done(Ok(values)) => {
                let mut it = values.into_iter();
                let first = it.next().unwrap_or(Value::Nil);
                let evidence = it.next().unwrap_or(Value::Nil);
                r.evidence =
                    convert::to_json(lua, &evidence).unwrap_or_else(|e| json!(format!("(evidence is not JSON: {e})")));
                match first {
                    Value::Boolean(b) => r.passed = Some(b),
                    Value::LightUserData(p) if Value::LightUserData(p) == marks::SKIP => r.skipped = true,
                    Value::LightUserData(p) if Value::LightUserData(p) == marks::UNDECIDED => {
                        let msg = it.next().and_then(|m| m.as_string().map(|s| s.to_string_lossy()));
                        r.error = Some(msg.unwrap_or_else(|| "the check could not decide".into()));
                    }
                    other => {
                        r.error =
                            Some(format!("a check must return true or false (and evidence), got {}", other.type_name()))
                    }
                }
            }
        }
        if let Some(why) = tapi::take_state_needed(lua) {
            r.passed = None;
            r.skipped = false;
            r.error = None;
            r.evidence = Json::Null;
            r.not_applicable = Some(why);
        }
        out[i] = Some(r);
    }
    out.into_iter().flatten().collect()
}
