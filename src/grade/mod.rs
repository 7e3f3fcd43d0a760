//! Grading one recorded item (`evalua grade`): a production trace read by
//! [`crate::otel`], or a trial of an evalua run dir, graded with the same
//! checks that grade a run's trials.
//!
//! Each worker thread keeps a Lua state with the suite evaluated once (in
//! full: any case may match an item) and reuses it while the reachability
//! walk of `lua::engine::reuse` proves an item changed nothing in it. Per
//! item: the suite's `trace_adapter` reads each span (if it has one), the
//! conventions build the calls, messages, answer and usage, the item is
//! matched to a case (`evalua.case` on its agent span, else the suite's
//! `match`), and the monitors run, then the case's checks. A check that
//! reaches for `t.db`, `t.files`, `t.outbox` or the work dir is *not
//! applicable*: a trace has no final state.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};
use serde_json::Value as Json;

use crate::lua::api::{self, declare, t as tapi};
use crate::lua::engine::{self as engine, Log, Segment, convert, limits::Guarded, reuse};
use crate::lua::load;
use crate::otel::item::{self, Adapted, AdaptedCall, AdaptedSpan, Recorded};
use crate::otel::read::Item;
use crate::otel::span::Span;
use crate::record::{self, CallCounts, CallStatus, Ended, Source, ToolSpan, Trace, TrialRecord};
use crate::spec::Suite;
use crate::trial::checks;
use crate::trial::{Plan, reexec};
use crate::util::dataset::{self, Format};

/// Limits on the adapter (per span) and on `match` (per item).
const HOOK_INSTRUCTIONS: u64 = 10_000_000;
const HOOK_SECONDS: u64 = 5;

/// What every worker shares: the suite as declared.
pub struct Context {
    /// Unique in the process: a worker's state belongs to one context.
    id: u64,
    pub suite: Suite,
    effects: HashMap<String, String>,
    cases: HashSet<String>,
    /// The plan items are re-executed on (SPEC §14), when any may be.
    reexec: Option<Arc<Plan>>,
    /// Re-execute every item (`--reexecute`, `grade = { reexecute = true }`);
    /// else only the formats that ask for it (τ-bench's results).
    reexecute_all: bool,
}

impl Context {
    pub fn new(suite: Suite) -> Context {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Context {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            effects: suite.tools.iter().map(|t| (t.name.clone(), t.effect.clone())).collect(),
            cases: suite.cases.iter().map(|c| c.id.clone()).collect(),
            suite,
            reexec: None,
            reexecute_all: false,
        }
    }

    /// Items are re-executed on `plan` (a plan of every case of the suite):
    /// all of them when `all`, else those whose format asks for it.
    pub fn reexecuting(mut self, plan: Plan, all: bool) -> Context {
        self.reexec = Some(Arc::new(plan));
        self.reexecute_all = all;
        self
    }
}

/// A graded item, before the run gives it its trial number.
pub struct Graded {
    /// The item's trace, its record within.
    pub trace: Trace,
    /// Whether the item belongs to one of the suite's cases (else its case is the item's own key).
    pub matched: bool,
    pub warnings: Vec<String>,
    /// The trial number the item says it is (τ-bench's `trial + 1`).
    pub trial: Option<u32>,
}

/// What became of an item.
pub enum Done {
    Graded(Box<Graded>),
    /// Not graded, and why (a warning naming the file and trace).
    Skipped(String),
}

struct Worker {
    context: u64,
    lua: Lua,
    /// The suite as evaluated in this state, while no item has changed it.
    suite: Option<Table>,
}

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// `evalua grade`'s declarations: every case table the suite declares (each
/// dataset row through its row function), kept by id. The suite was checked
/// when it loaded; a row that fails here is left out.
struct Collect(Table);

impl declare::Declarations for Collect {
    fn case(&self, lua: &Lua, case: Table) -> mlua::Result<Option<String>> {
        engine::limits(lua).extend(load::CASE_INSTRUCTIONS, load::CASE_TIME);
        if let Ok(Value::String(id)) = case.raw_get::<Value>("id") {
            self.0.raw_set(id, case)?;
        }
        Ok(None)
    }

    fn dataset(&self, lua: &Lua, d: declare::DatasetDecl) -> mlua::Result<Option<String>> {
        let path = std::path::PathBuf::from(&d.path);
        let Some(format) = d.format.as_deref().map_or_else(|| Format::from_path(&path), Format::from_name) else {
            return Ok(Some(format!("{}: unknown dataset format", d.path)));
        };
        let Some(row_fn) = d.function else { return Ok(None) };
        let mut i = 0u32;
        let streamed = dataset::stream(&path, format, |pos, row| -> Result<(), String> {
            i += 1;
            engine::limits(lua).extend(load::CASE_INSTRUCTIONS * 10, load::CASE_TIME * 10);
            let Ok(json) = row else { return Ok(()) };
            let at = format!("{}:{}", d.path, pos.line);
            let case = convert::to_lua(lua, &json).and_then(|v| row_fn.call::<Table>((v, i, at)));
            if let Ok(case) = case
                && let Ok(Value::String(id)) = case.raw_get::<Value>("id")
            {
                self.0.raw_set(id, case).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        Ok(match streamed {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e),
            Err(e) => Some(format!("{}: cannot read: {e}", d.path)),
        })
    }
}

fn worker(ctx: &Context) -> Result<(Lua, Table), String> {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        if w.as_ref().is_none_or(|x| x.context != ctx.id) {
            let cfg = load::state_config(&ctx.suite.path, ctx.suite.sources.clone(), 0, true);
            let lua = api::new_state(cfg).map_err(|e| format!("cannot create a Lua state: {e}"))?;
            *w = Some(Worker { context: ctx.id, lua, suite: None });
        }
        let worker = w.as_mut().ok_or("no worker")?;
        if let Some(suite) = &worker.suite {
            return Ok((worker.lua.clone(), suite.clone()));
        }
        let lua = worker.lua.clone();
        engine::fresh_env(&lua).map_err(|e| e.to_string())?;
        lua.set_app_data(Log::default());
        // The suite's case tables (declared and dataset rows), by id, kept on
        // the suite table where an item's case is looked up.
        let cases = lua.create_table().map_err(|e| e.to_string())?;
        lua.set_app_data(declare::Declare(Rc::new(Collect(cases.clone()))));
        let evaluated = load::eval_suite(&lua, &ctx.suite.path);
        lua.remove_app_data::<declare::Declare>();
        let suite = evaluated?;
        suite.raw_set("_case_index", cases).map_err(|e| e.to_string())?;
        // Trusts the host's objects for the per-item snapshots (see `Guard`).
        reuse::trust_host(&lua).map_err(|e| e.to_string())?;
        worker.suite = Some(suite.clone());
        Ok((lua, suite))
    })
}

/// What proves an item left the evaluated suite as it found it: snapshots
/// (`lua::engine::reuse`) of the parts of the suite that run for the item,
/// taken before they run: the monitors, adapter and `match`, then the
/// matched case. Anything an item's code can change is reachable from them
/// (or from the globals and project modules, which every snapshot lists).
#[derive(Default)]
struct Guard {
    parts: Vec<(Table, Table)>,
    /// A part could not be listed (it holds a coroutine): evaluate afresh.
    unlisted: bool,
}

impl Guard {
    fn watch(&mut self, lua: &Lua, values: &[Value]) {
        let Ok(part) = lua.create_sequence_from(values.iter().cloned()) else {
            self.unlisted = true;
            return;
        };
        match reuse::snapshot_part(lua, &part) {
            Ok(Some(snap)) => self.parts.push((part, snap)),
            _ => self.unlisted = true,
        }
    }

    fn unchanged(&self, lua: &Lua) -> bool {
        !self.unlisted
            && self.parts.iter().all(|(p, s)| {
                reuse::suite_roots(lua, p, &[]).and_then(|r| reuse::unchanged(lua, r, s)).unwrap_or(false)
            })
    }
}

/// After an item: keep the evaluated suite only if the item left it as it
/// was, and the state only if no limit tripped.
fn after_item(lua: &Lua, trips_before: u64, guard: &Guard) {
    WORKER.with(|w| {
        let mut w = w.borrow_mut();
        if engine::limits(lua).trips() != trips_before {
            *w = None;
            return;
        }
        if let Some(worker) = w.as_mut()
            && !guard.unchanged(lua)
        {
            worker.suite = None;
        }
    });
}

/// Grade one item. Never panics on bad input: what cannot be read is a `Skipped` with its reason.
pub fn grade(ctx: &Context, item: Item) -> Done {
    let (lua, suite_t) = match worker(ctx) {
        Ok(x) => x,
        Err(e) => return Done::Skipped(format!("cannot evaluate the suite to grade: {e}")),
    };
    let trips = engine::limits(&lua).trips();
    lua.set_app_data(Log::default());
    let mut guard = Guard::default();
    let out = grade_in(ctx, &lua, &suite_t, item, &mut guard);
    after_item(&lua, trips, &guard);
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
    let parts = match item {
        Item::Spans(it) => {
            let adapted = if ctx.suite.trace_adapter {
                match adapt(lua, suite_t, &it.spans) {
                    Ok(a) => a,
                    Err(e) => {
                        return Done::Skipped(format!(
                            "{}: trace {}: trace_adapter failed: {e}: not graded",
                            it.file, it.key
                        ));
                    }
                }
            } else {
                Vec::new()
            };
            let recorded = item::read(&it.spans, &adapted);
            if !recorded.readable {
                return Done::Skipped(format!(
                    "{}: trace {}: no GenAI, OpenInference or adapted span (no agent, model or tool span): nothing to grade",
                    it.file, it.key
                ));
            }
            let started_at = jiff::Timestamp::from_nanosecond(recorded.start_ns as i128).ok().map(|t| t.to_string());
            let source = Source {
                file: it.file.clone(),
                trace_id: recorded.trace_ids.first().cloned(),
                conversation_id: it.conversation_id.clone().or(recorded.conversation_id.clone()),
                trace_ids: if recorded.trace_ids.len() > 1 { recorded.trace_ids.clone() } else { Vec::new() },
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
        Item::Trial { record, trace, file } => {
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
        Item::Trajectory(tr) => {
            let tr = *tr;
            let source = Source {
                file: tr.file.clone(),
                trace_id: None,
                conversation_id: Some(tr.key.clone()),
                trace_ids: Vec::new(),
            };
            let reexecute = tr.kind == crate::otel::trajectories::Kind::TauBench;
            if reexecute && tr.case.as_ref().is_some_and(|c| !ctx.cases.contains(c)) {
                return Done::Skipped(format!(
                    "{}: {} ({}): names {}, which the suite does not declare: not graded",
                    tr.file,
                    tr.at,
                    tr.key,
                    tr.case.as_deref().unwrap_or_default()
                ));
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
    };
    // A call of a tool the suite does not have: said, and (re-executed) rejected.
    let unknown: Vec<&str> = {
        let mut seen = Vec::new();
        for c in &parts.recorded.calls {
            if !ctx.effects.contains_key(&c.name) && !seen.contains(&c.name.as_str()) {
                seen.push(c.name.as_str());
            }
        }
        seen
    };
    if !unknown.is_empty() && (parts.reexecute || ctx.reexecute_all) {
        warnings.push(format!(
            "{}: {}: calls tools the suite does not have ({}): re-executed as rejected calls",
            parts.source.file,
            parts.key,
            unknown.join(", ")
        ));
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
                    &plan.cases[i],
                    number,
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

    // Monitors first, then the case's checks.
    let monitors = checks::monitors_of(suite_t).unwrap_or_default();
    // Judges' calls are timed from the end of the recorded trace.
    let grading = Instant::now();
    checks::take_judge_calls(lua, grading, 0.0);
    let monitor_results = checks::run_checks(lua, &monitors, &t);
    let modes = checks::failure_modes(&monitor_results);
    let _ = tapi::set_failure_modes(lua, &t, &modes);
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
    let mut results = checks::run_checks(lua, &case_checks, &t);
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
    let case_id = case.clone().unwrap_or_else(|| parts.key.clone());
    let mut record = TrialRecord {
        agent: None,
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
        source: Some(parts.source),
        safety: None,
        abstained: false,
        interventions: 0,
        sources: Vec::new(),
        contaminated: false,
        contamination: Vec::new(),
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
        started_at: parts.started_at,
        state: None,
    };
    Done::Graded(Box::new(Graded { trace, matched: case.is_some(), warnings, trial: parts.trial }))
}

/// The case table of an item that matches none of the suite's cases.
fn item_case_table(lua: &Lua, key: &str, input: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("id", key)?;
    t.raw_set("input", input)?;
    t.raw_set("checks", lua.create_table()?)?;
    Ok(t)
}

/// A span as Lua sees it (the adapter's argument, `t.spans`' items).
pub fn span_table(lua: &Lua, s: &Span) -> mlua::Result<Table> {
    tapi::span_table(lua, s)
}

fn hook<R: mlua::FromLuaMulti>(lua: &Lua, f: &Function, arg: impl mlua::IntoLuaMulti) -> Result<R, String> {
    let seg = Segment {
        instructions: Some(HOOK_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(HOOK_SECONDS)),
    };
    match engine::limits(lua).guard(lua, seg, || f.call::<R>(arg)) {
        Guarded::Done(Ok(v)) => Ok(v),
        Guarded::Done(Err(e)) => Err(engine::describe(&e)),
        Guarded::Stopped(stop) => Err(format!("stopped: {}", stop.describe())),
    }
}

/// The suite's `trace_adapter`, on every span.
fn adapt(lua: &Lua, suite_t: &Table, spans: &[Span]) -> Result<Vec<Adapted>, String> {
    let f: Function = suite_t.get("trace_adapter").map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let arg = span_table(lua, s).map_err(|e| e.to_string())?;
        let v: Value = hook(lua, &f, arg).map_err(|e| format!("span {} ({}): {e}", s.span_id, s.name))?;
        out.push(adapted(lua, v).map_err(|e| format!("span {} ({}): {e}", s.span_id, s.name))?);
    }
    Ok(out)
}

const ADAPTED_KEYS: [&str; 5] = ["skip", "call", "input", "answer", "usage"];

/// What an adapter returned, read strictly.
fn adapted(lua: &Lua, v: Value) -> Result<Adapted, String> {
    let t = match v {
        Value::Nil => return Ok(Adapted::Default),
        Value::Table(t) => t,
        other => return Err(format!("trace_adapter must return nil or a table, got {}", other.type_name())),
    };
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        let name = k.as_string().map(|s| s.to_string_lossy()).unwrap_or_default();
        if !ADAPTED_KEYS.contains(&name.as_str()) {
            return Err(format!("trace_adapter returned an unknown key {k:?} (known: {})", ADAPTED_KEYS.join(", ")));
        }
    }
    if t.get::<Option<bool>>("skip").map_err(|e| e.to_string())? == Some(true) {
        return Ok(Adapted::Skip);
    }
    let text = |k: &str| -> Result<Option<String>, String> {
        match t.get::<Value>(k).map_err(|e| e.to_string())? {
            Value::Nil => Ok(None),
            Value::String(s) => Ok(Some(s.to_string_lossy())),
            other => Ok(Some(convert::to_json(lua, &other)?.to_string())),
        }
    };
    let mut a = AdaptedSpan { input: text("input")?, answer: text("answer")?, ..Default::default() };
    if let Some(c) = t.get::<Option<Table>>("call").map_err(|e| e.to_string())? {
        let name: String =
            c.get::<Option<String>>("name").map_err(|e| e.to_string())?.ok_or("call.name is required")?;
        let json = |k: &str| -> Result<Option<Json>, String> {
            match c.get::<Value>(k).map_err(|e| e.to_string())? {
                Value::Nil => Ok(None),
                v => Ok(Some(convert::to_json(lua, &v)?)),
            }
        };
        let status = match c.get::<Option<String>>("status").map_err(|e| e.to_string())?.as_deref() {
            None | Some("executed") | Some("ok") => CallStatus::Executed,
            Some("failed") | Some("error") => CallStatus::Failed,
            Some("denied") => CallStatus::Denied,
            Some("rejected") => CallStatus::Rejected,
            Some("faulted") => CallStatus::Faulted(None),
            Some(other) => {
                return Err(format!("call.status {other:?} is not executed, failed, denied, rejected or faulted"));
            }
        };
        a.call = Some(AdaptedCall {
            name,
            args: json("args")?.unwrap_or(Json::Object(Default::default())),
            result: json("result")?,
            status,
            error: c.get::<Option<String>>("error").map_err(|e| e.to_string())?,
        });
    }
    if let Some(u) = t.get::<Option<Table>>("usage").map_err(|e| e.to_string())? {
        a.input_tokens = u.get::<Option<f64>>("input_tokens").map_err(|e| e.to_string())?.map(|v| v.max(0.0) as u64);
        a.output_tokens = u.get::<Option<f64>>("output_tokens").map_err(|e| e.to_string())?.map(|v| v.max(0.0) as u64);
        a.cost_usd = u.get::<Option<f64>>("cost_usd").map_err(|e| e.to_string())?;
    }
    Ok(Adapted::Read(Box::new(a)))
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

/// The suite's `match(item)`: a case id, or nil.
fn call_match(lua: &Lua, suite_t: &Table, t: &Table) -> Result<Option<String>, String> {
    let f: Function = suite_t.get("match").map_err(|e| e.to_string())?;
    match hook::<Value>(lua, &f, t.clone())? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_string_lossy())),
        other => Err(format!("match must return a case id (a string) or nil, got {}", other.type_name())),
    }
}
