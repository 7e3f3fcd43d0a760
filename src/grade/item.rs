//! One recorded item graded: read (its spans through the conventions and the
//! suite's `trace_adapter`, or a run dir's trial as recorded), matched to a
//! case, re-executed when it asks for it, then the monitors and the case's
//! checks on `t`.

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mlua::{Lua, Table, Value};
use serde_json::Value as Json;

use super::adapter::{adapt, call_match};
use super::context::{Context, Done, Graded};
use super::suite::{self, Guard};
use crate::lua::api::t as tapi;
use crate::lua::engine::{self as engine, Log};
use crate::otel::item::{self, Recorded};
use crate::otel::read::Item;
use crate::otel::span::Span;
use crate::record::{self, CallCounts, Ended, Source, ToolSpan, Trace, TrialRecord};
use crate::trial::{checks, reexec};

/// Grade one item. Never panics on bad input: what cannot be read is a `Skipped` with its reason.
pub fn grade(ctx: &Context, item: Item) -> Done {
    let (lua, suite_t) = match suite::evaluated(ctx) {
        Ok(x) => x,
        Err(e) => return Done::Skipped(format!("cannot evaluate the suite to grade: {e}")),
    };
    let trips = engine::limits(&lua).trips();
    lua.set_app_data(Log::default());
    let mut guard = Guard::default();
    let out = grade_in(ctx, &lua, &suite_t, item, &mut guard);
    suite::after_item(ctx, &lua, trips, &guard);
    out
}

struct Parts {
    key: String,
    recorded: Recorded,
    spans: Rc<Vec<Span>>,
    source: Source,
    /// The case the item names (a run dir's trial, or `evalua.case`).
    case: Option<String>,
    started_at: Option<String>,
    /// The dataset row (task) the item ran on, when it carries one.
    row: Option<Json>,
    trial: Option<u32>,
    /// Its format asks for re-execution (τ-bench's results).
    reexecute: bool,
}

fn grade_in(ctx: &Context, lua: &Lua, suite_t: &Table, item: Item, guard: &mut Guard) -> Done {
    let mut warnings = Vec::new();
    let get = |k: &str| suite_t.raw_get::<Value>(k).unwrap_or(Value::Nil);
    guard.watch(lua, &[get("_monitors"), get("trace_adapter"), get("match")]);
    let parts = match parts_of(ctx, lua, suite_t, item) {
        Ok(p) => p,
        Err(done) => return done,
    };
    if parts.reexecute || ctx.reexecute_all {
        warnings.extend(unknown_tools(ctx, &parts));
    }
    let mut recorded = parts.recorded;
    for c in &mut recorded.calls {
        if c.effect.is_none() {
            c.effect = ctx.effects.get(&c.name).cloned();
        }
    }

    // Build `t` with the item's own case, then see whether it belongs to one of the suite's.
    let placeholder = match item_case_table(lua, &parts.key, &recorded.input) {
        Ok(t) => t,
        Err(e) => return Done::Skipped(format!("{}: trace {}: {e}", parts.source.file, parts.key)),
    };
    let ended = recorded.ended.unwrap_or(Ended::Final);
    let t = match tapi::build_recorded(
        lua,
        tapi::RecordedParts {
            case_table: &placeholder,
            trial: 1,
            answer: &recorded.answer,
            ended,
            error: recorded.error.as_deref(),
            calls: &recorded.calls,
            messages: &recorded.messages,
            usage: &recorded.usage,
            spans: parts.spans.clone(),
        },
    ) {
        Ok(t) => t,
        Err(e) => return Done::Skipped(format!("{}: trace {}: cannot build t: {e}", parts.source.file, parts.key)),
    };
    if let Err(e) = item_fields(lua, &t, &recorded.input, &parts.key, &parts.source) {
        return Done::Skipped(format!("{}: trace {}: cannot build t: {e}", parts.source.file, parts.key));
    }
    let mut case = parts.case.filter(|c| ctx.cases.contains(c));
    if case.is_none() && ctx.suite.matcher {
        match call_match(lua, suite_t, &t) {
            Ok(Some(c)) if ctx.cases.contains(&c) => case = Some(c),
            Ok(Some(c)) => warnings.push(format!(
                "{}: trace {}: match returned case '{c}', which the suite does not declare: graded with the monitors only",
                parts.source.file, parts.key
            )),
            Ok(None) => {}
            Err(e) => warnings.push(format!(
                "{}: trace {}: match failed: {e}: graded with the monitors only",
                parts.source.file, parts.key
            )),
        }
    }
    let case_table = case.as_ref().and_then(|c| {
        suite_t.get::<Table>("_case_index").and_then(|i| i.get::<Option<Table>>(c.as_str())).ok().flatten()
    });
    if let Some(ct) = &case_table {
        guard.watch(lua, &[Value::Table(ct.clone())]);
        let _ = t.raw_set("case", ct.clone());
    }

    // Re-executed: the item's calls run again through the executor on a
    // fresh sandbox of its case, and it is graded as a trial (SPEC §14).
    if parts.reexecute || ctx.reexecute_all {
        let planned = ctx.reexec.as_ref().zip(case.as_ref()).and_then(|(plan, c)| Some((plan, *plan.ids.get(c)?)));
        match planned {
            Some((plan, i)) => {
                static SLOT: AtomicU64 = AtomicU64::new(0);
                let workdir = plan.scratch.path().join(format!("item-{}", SLOT.fetch_add(1, Ordering::Relaxed)));
                let number = parts.trial.unwrap_or(1);
                let out = reexec::run(
                    plan,
                    crate::trial::Position::first(i, number),
                    reexec::Recording { recorded: &recorded, row: parts.row.as_ref(), source: parts.source, workdir },
                );
                return Done::Graded(Box::new(Graded {
                    trace: out.trace,
                    matched: true,
                    warnings,
                    trial: parts.trial,
                }));
            }
            None => warnings.push(format!(
                "{}: {}: not re-executed: it belongs to none of the suite's cases (graded as recorded)",
                parts.source.file, parts.key
            )),
        }
    }

    let item = ItemId { key: parts.key, source: parts.source, started_at: parts.started_at, trial: parts.trial };
    checked(ctx, lua, suite_t, &t, Checked { case, case_table, recorded, ended, warnings }, item)
}

/// A re-executed item's calls of tools the suite does not have: said (they run again as rejected calls).
fn unknown_tools(ctx: &Context, parts: &Parts) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for c in &parts.recorded.calls {
        if !ctx.effects.contains_key(&c.name) && !seen.contains(&c.name.as_str()) {
            seen.push(c.name.as_str());
        }
    }
    (!seen.is_empty()).then(|| {
        format!(
            "{}: {}: calls tools the suite does not have ({}): re-executed as rejected calls",
            parts.source.file,
            parts.key,
            seen.join(", ")
        )
    })
}

/// An item read, before it is matched and graded: its parts (a trace's spans
/// through the conventions and the adapter, a run dir's trial as recorded,
/// or a trajectory), or why it cannot be graded.
fn parts_of(ctx: &Context, lua: &Lua, suite_t: &Table, item: Item) -> Result<Parts, Done> {
    Ok(match item {
        Item::Spans(it) => {
            let adapted = if ctx.suite.trace_adapter {
                match adapt(lua, suite_t, &it.spans) {
                    Ok(a) => a,
                    Err(e) => {
                        return Err(Done::Skipped(format!(
                            "{}: trace {}: trace_adapter failed: {e}: not graded",
                            it.file, it.key
                        )));
                    }
                }
            } else {
                Vec::new()
            };
            let recorded = item::read(&it.spans, &adapted);
            if !recorded.readable {
                return Err(Done::Skipped(format!(
                    "{}: trace {}: no GenAI, OpenInference or adapted span (no agent, model or tool span): nothing to grade",
                    it.file, it.key
                )));
            }
            let started_at = jiff::Timestamp::from_nanosecond(recorded.start_ns as i128).ok().map(|t| t.to_string());
            let source = Source {
                file: it.file.clone(),
                trace_id: recorded.trace_ids.first().cloned(),
                conversation_id: it.conversation_id.clone().or(recorded.conversation_id.clone()),
                trace_ids: if recorded.trace_ids.len() > 1 { recorded.trace_ids.clone() } else { Vec::new() },
                verdict: None,
            };
            Parts {
                key: it.key,
                case: recorded.case.clone(),
                recorded,
                spans: Rc::new(it.spans),
                source,
                started_at,
                row: None,
                trial: None,
                reexecute: false,
            }
        }
        Item::Trial { record, trace, file } => trial_parts(&record, &trace, &file),
        Item::Trajectory(tr) => {
            let tr = *tr;
            let source = Source {
                file: tr.file.clone(),
                trace_id: None,
                conversation_id: Some(tr.key.clone()),
                trace_ids: Vec::new(),
                verdict: tr.verdict.clone(),
            };
            if let Some(theirs) = tr.suite.as_ref().filter(|s| **s != ctx.suite.name) {
                return Err(Done::Skipped(format!(
                    "{}: {} was recorded on {theirs}, not {}: not graded",
                    tr.file, tr.key, ctx.suite.name
                )));
            }
            let reexecute = tr.reexecute;
            if reexecute && tr.case.as_ref().is_some_and(|c| !ctx.cases.contains(c)) {
                return Err(Done::Skipped(format!(
                    "{}: {} ({}): names {}, which the suite does not declare: not graded",
                    tr.file,
                    tr.at,
                    tr.key,
                    tr.case.as_deref().unwrap_or_default()
                )));
            }
            Parts {
                key: tr.key,
                case: tr.case,
                recorded: tr.recorded,
                spans: Rc::new(Vec::new()),
                source,
                started_at: None,
                row: tr.task,
                trial: tr.trial,
                reexecute,
            }
        }
    })
}

/// A run dir's trial as an item: as recorded.
fn trial_parts(record: &TrialRecord, trace: &Trace, file: &str) -> Parts {
    let recorded = Recorded {
        input: trace.input.clone(),
        answer: trace.record.answer.clone(),
        messages: trace.messages.clone(),
        calls: trace.calls.clone(),
        model_calls: trace.model_calls.clone(),
        usage: trace.record.usage.clone(),
        ended: Some(trace.record.ended),
        error: trace.record.error.clone(),
        first_failure: record::FirstFailure::of(&trace.calls, &trace.model_calls),
        readable: true,
        ..Default::default()
    };
    let key = format!("{}.{}", record.case, record.trial);
    let source = Source {
        file: format!("{file}/{}", record.trace),
        trace_id: None,
        conversation_id: Some(format!("{}/{}", file, key)),
        trace_ids: Vec::new(),
        verdict: record.source.as_ref().and_then(|s| s.verdict.clone()),
    };
    Parts {
        key,
        case: Some(record.case.clone()),
        recorded,
        spans: Rc::new(Vec::new()),
        source,
        started_at: trace.started_at.clone(),
        row: None,
        trial: None,
        reexecute: false,
    }
}

/// Who an item is, for its record.
struct ItemId {
    key: String,
    source: Source,
    started_at: Option<String>,
    trial: Option<u32>,
}

/// An item matched (or not) to a case, ready for its checks.
struct Checked {
    case: Option<String>,
    case_table: Option<Table>,
    recorded: Recorded,
    ended: Ended,
    warnings: Vec<String>,
}

/// The monitors, then the case's checks, on `t`; the item's record and trace.
fn checked(ctx: &Context, lua: &Lua, suite_t: &Table, t: &Table, c: Checked, item: ItemId) -> Done {
    let Checked { case, case_table, recorded, ended, warnings } = c;
    // Monitors first, then the case's checks.
    let monitors = checks::monitors_of(suite_t).unwrap_or_default();
    // Judges' calls are timed from the end of the recorded trace.
    let grading = Instant::now();
    checks::take_judge_calls(lua, grading, 0.0);
    let monitor_results = checks::run_checks(lua, &monitors, t);
    let modes = checks::failure_modes(&monitor_results);
    let _ = tapi::set_failure_modes(lua, t, &modes);
    let case_checks: Vec<checks::CheckRun> = match (&case, &case_table) {
        (Some(_), Some(ct)) => {
            let (tables, infos) = crate::trial::case_checks(ct);
            tables
                .into_iter()
                .zip(infos)
                .map(|(table, info)| checks::CheckRun {
                    table,
                    name: info.name,
                    critical: info.critical,
                    monitor: false,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let mut results = checks::run_checks(lua, &case_checks, t);
    results.extend(monitor_results);
    let judged = checks::take_judge_calls(lua, grading, recorded.usage.wall_ms);
    // A recorded agent that crashed is never accepted either, unless its case says why it may be.
    let rules = record::EndRules {
        abnormal_accepted: case_table
            .as_ref()
            .is_some_and(|ct| ct.get::<Option<String>>("accept_abnormal_end").ok().flatten().is_some()),
        should_abstain: case_table
            .as_ref()
            .is_some_and(|ct| ct.get::<Option<bool>>("should_abstain").ok().flatten() == Some(true)),
    };
    let outcome = record::outcome_after(false, ended, rules, &results);
    let log = lua.remove_app_data::<Log>().map(|l| l.0).unwrap_or_default();
    let case_id = case.clone().unwrap_or_else(|| item.key.clone());
    let mut record = TrialRecord {
        agent: None,
        perturbation: None,
        case: case_id,
        trial: 0,
        seed: 0,
        outcome,
        ended,
        checks: results,
        calls: CallCounts::of(&recorded.calls),
        wall_ms: recorded.usage.wall_ms,
        usage: recorded.usage,
        answer: recorded.answer,
        error: recorded.error,
        infra_error: None,
        trace: String::new(),
        failure_modes: (!ctx.suite.monitors.is_empty()).then_some(modes),
        tool_spans: ToolSpan::of(&recorded.calls),
        first_failure: recorded.first_failure.clone(),
        source: Some(item.source),
        safety: None,
        ..Default::default()
    };
    record.publish(crate::trial::published::of(
        &recorded.calls,
        |name| ctx.suite.tools.iter().find(|t| t.name == name),
        &ctx.suite.publish.contamination,
    ));
    let trace = Trace {
        record,
        input: recorded.input,
        messages: recorded.messages,
        calls: recorded.calls,
        outbox: Vec::new(),
        log,
        stderr_tail: None,
        model_calls: recorded.model_calls.into_iter().chain(judged).collect(),
        started_at: item.started_at,
        state: None,
    };
    Done::Graded(Box::new(Graded { trace, matched: case.is_some(), warnings, trial: item.trial }))
}

/// The case table of an item that matches none of the suite's cases.
fn item_case_table(lua: &Lua, key: &str, input: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("id", key)?;
    t.raw_set("input", input)?;
    t.raw_set("checks", lua.create_table()?)?;
    Ok(t)
}

/// `t.id`, `t.input` and `t.source` of a graded item.
fn item_fields(lua: &Lua, t: &Table, input: &str, key: &str, source: &Source) -> mlua::Result<()> {
    t.raw_set("id", key)?;
    t.raw_set("input", input)?;
    let s = lua.create_table()?;
    s.raw_set("file", source.file.as_str())?;
    s.raw_set("trace_id", source.trace_id.as_deref())?;
    s.raw_set("conversation_id", source.conversation_id.as_deref())?;
    t.raw_set("source", s)
}
