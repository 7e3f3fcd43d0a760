//! Loading a suite: run the Lua file in a sandboxed state (declaring only)
//! and read the returned tables into the typed specs of [`crate::spec`]. Every
//! Lua table → spec conversion is here. Trials later evaluate the same file in
//! their worker's state to get the functions (tool handlers, checks, scripted
//! agents) back.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Lua, Table, Value};

use super::agents::{finish_adversaries, finish_agent, finish_agents};
use super::api::{self, declare};
use super::engine::{self as lua, Segment, StateConfig, convert, limits::Guarded};
use super::suite_checks::{check_gate_agents, check_tool_names};
use crate::error::{Error, Result};
use crate::spec::{
    AgentSpec, CaseSource, CaseSpec, CaseTable, CheckInfo, DatasetSpec, JudgeSpec, Mention, MonitorSpec, Publish,
    QueryUse, SandboxSpec, Sources, Suite, SuiteJudge, SuiteTable, TestsCheck, ToolsVia,
};
use crate::util::dataset::{self, Format};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

/// Limits on loading a suite file: the file itself, plus a share for each
/// case it declares (so a suite of any size loads, and a runaway loop that
/// declares nothing is still stopped).
const LOAD_INSTRUCTIONS: u64 = 200_000_000;
const LOAD_SECONDS: u64 = 20;
pub const CASE_INSTRUCTIONS: u64 = 200_000;
/// How far past its deadline loading may run before evalua gives up (the
/// run's watchdog gives a worker as much).
const LOAD_WATCHDOG_MARGIN: Duration = Duration::from_secs(5);
pub const CASE_TIME: Duration = Duration::from_millis(2);
/// Limits on mapping one dataset row (`map` and the case's checks).
const ROW_INSTRUCTIONS: u64 = 10_000_000;
const ROW_SECONDS: u64 = 5;
/// A suite declares at most this many cases.
const MAX_CASES: usize = 5_000_000;
/// Skipped rows named in the manifest, per dataset.
const SKIPPED_SHOWN: usize = 20;

pub fn state_config(path: &Path, sources: Arc<Sources>, clock: i64, validate: bool) -> StateConfig {
    let suite_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let module_dirs = crate::util::paths::module_dirs(&suite_dir).into();
    StateConfig { suite_dir, module_dirs, sources, clock, validate, judge_cache: true }
}

/// Run the suite file in `lua` and return the suite table it returns.
pub fn eval_suite(lua: &Lua, path: &Path) -> std::result::Result<Table, String> {
    let limits = lua::limits(lua);
    let seg = Segment {
        instructions: Some(LOAD_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(LOAD_SECONDS)),
    };
    let value = match limits.guard(lua, seg, || lua::run_file(lua, path)) {
        Guarded::Done(Ok(v)) => v,
        Guarded::Done(Err(e)) => return Err(lua::placed(lua, lua::describe(&e))),
        Guarded::Stopped(stop) => {
            return Err(format!("{}: loading the suite stopped: {}", display_path(path), stop.describe()));
        }
    };
    match value {
        Value::Table(t) if t.raw_get::<Value>("_tools").map(|v| v.is_table()).unwrap_or(false) => Ok(t),
        _ => Err(format!(
            "{}: the suite file must end with `return suite` (the value of evalua.suite{{...}})",
            display_path(path)
        )),
    }
}

/// Load and validate a suite file. Every independent error is said at
/// once, one a line, in the order of their `file:line`.
pub fn load(path: &Path) -> Result<Suite> {
    let (suite, errors) = load_checked(path)?;
    if errors.is_empty() { Ok(suite) } else { Err(errors_of(errors)) }
}

/// One error for many: each on its own line, in the order of their
/// `file:line` (the same message once).
pub fn errors_of(mut errors: Vec<String>) -> Error {
    errors.sort_by_key(|e| crate::util::names::location_key(e));
    errors.dedup();
    Error::Input(errors.join("\n"))
}

/// Load a suite file and check it, going on past the errors of its
/// declarations: the suite without the declarations that were wrong, and the
/// errors (each `file:line: message`). Err: the file could not be loaded at
/// all (missing, a syntax error, an error outside any declaration).
pub fn load_checked(path: &Path) -> Result<(Suite, Vec<String>)> {
    let path = std::path::absolute(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    if !path.is_file() {
        return Err(Error::Input(format!("{}: no such suite file", display_path(&path))));
    }
    let sources = Arc::new(Sources::default());
    let lua = api::new_state(state_config(&path, sources.clone(), 0, true))
        .map_err(|e| Error::Environment(format!("cannot create a Lua state: {e}")))?;
    let loader = Rc::new(Loader::default());
    lua.set_app_data(declare::Declare(loader.clone()));
    // The limits stop Lua code; the C functions a suite can reach are
    // bounded too. Should one still stay past the load's deadline, the
    // thread cannot be stopped: evalua gives up on the suite.
    let shown = display_path(&path);
    let overrun = move || {
        eprintln!(
            "error: {shown}: loading the suite overran its time limit by more than {} s in code no limit could stop",
            LOAD_WATCHDOG_MARGIN.as_secs()
        );
        std::process::exit(2);
    };
    let evaluated = crate::util::watch::watched(LOAD_WATCHDOG_MARGIN, overrun, || eval_suite(&lua, &path));
    lua.remove_app_data::<declare::Declare>();
    let mut declared = std::mem::take(&mut *loader.0.borrow_mut());
    let t = match evaluated {
        Ok(t) => t,
        // The errors reported so far, and the one that stopped the file.
        Err(e) => {
            declared.errors.push(e);
            return Err(errors_of(declared.errors));
        }
    };
    let mut errors = std::mem::take(&mut declared.errors);
    // Most errors name their own `file:line`; the others get the suite's path.
    let located = |e: String| if has_location(&e) { e } else { format!("{}: {e}", display_path(&path)) };
    match read_suite(&t, &path, sources, declared) {
        Ok((suite, more)) => {
            errors.extend(more.into_iter().map(located));
            Ok((suite, errors))
        }
        Err(e) => {
            errors.push(located(e));
            Err(errors_of(errors))
        }
    }
}

/// What loading collected from the suite's declarations.
#[derive(Default)]
struct Declared {
    cases: Vec<CaseSpec>,
    /// Case id → index in `cases`.
    ids: HashMap<String, usize>,
    judges: Vec<SuiteJudge>,
    /// A judge spec (as JSON) → index in `judges`.
    judge_index: HashMap<String, usize>,
    datasets: Vec<DatasetSpec>,
    /// Tool names the checks mention, each once (see [`Suite::check_tools`]).
    check_tools: Vec<Mention>,
    mentioned: std::collections::HashSet<String>,
    /// SQL queries the checks run, each once per fixture (see [`Suite::queries`]).
    queries: Vec<QueryUse>,
    queried: std::collections::HashSet<(Option<PathBuf>, String)>,
    /// The declarations' errors, each `file:line: message` (loading went on without them).
    errors: Vec<String>,
}

impl Declared {
    fn add(&mut self, read: ReadCase) -> std::result::Result<(), String> {
        let ReadCase { spec, judges, checks } = read;
        if let Some(&i) = self.ids.get(&spec.id) {
            return Err(format!("duplicate case id '{}' (first declared at {})", spec.id, self.cases[i].location));
        }
        if self.cases.len() >= MAX_CASES {
            return Err(format!("a suite declares at most {MAX_CASES} cases"));
        }
        for (name, j) in judges {
            let key = serde_json::to_string(&j).unwrap_or_default();
            match self.judge_index.get(&key) {
                Some(&i) => {
                    let judge = &mut self.judges[i];
                    judge.cases.push(spec.id.clone());
                    if !judge.checks.contains(&name) {
                        judge.checks.push(name);
                    }
                }
                None => {
                    self.judge_index.insert(key, self.judges.len());
                    self.judges.push(SuiteJudge { spec: j, cases: vec![spec.id.clone()], checks: vec![name] });
                }
            }
        }
        // What the checks use, each distinct use kept once: checked against
        // the suite's tools and the fixtures when the suite is read.
        for c in checks {
            let at = c.location.clone().unwrap_or_else(|| spec.location.clone());
            for name in c.tools {
                if self.mentioned.insert(name.clone()) {
                    let what = format!("check '{}' (case '{}')", c.name, spec.id);
                    self.check_tools.push(Mention { name, at: at.clone(), what });
                }
            }
            for sql in c.sql {
                if self.queried.insert((spec.fixture.clone(), sql.clone())) {
                    let (check, case, fixture) = (c.name.clone(), spec.id.clone(), spec.fixture.clone());
                    self.queries.push(QueryUse { fixture, sql, at: at.clone(), check, case });
                }
            }
        }
        self.ids.insert(spec.id.clone(), self.cases.len());
        self.cases.push(spec);
        Ok(())
    }
}

/// Loading's [`declare::Declarations`]: each case becomes its spec at once
/// (its Lua table is let go), each dataset row is read, mapped and declared.
#[derive(Default)]
struct Loader(RefCell<Declared>);

impl declare::Declarations for Loader {
    fn error(&self, msg: String) -> bool {
        let mut d = self.0.borrow_mut();
        if !d.errors.contains(&msg) {
            d.errors.push(msg);
        }
        true
    }

    fn case(&self, lua: &Lua, case: Table) -> mlua::Result<Option<String>> {
        lua::limits(lua).extend(CASE_INSTRUCTIONS, CASE_TIME);
        let read = match read_case(&case) {
            Ok(x) => x,
            Err(e) => return Ok(Some(e)),
        };
        Ok(self.0.borrow_mut().add(read).err())
    }

    fn dataset(&self, lua: &Lua, d: declare::DatasetDecl) -> mlua::Result<Option<String>> {
        let path = PathBuf::from(&d.path);
        let shown = display_path(&path);
        let format = match d.format.as_deref() {
            Some(f) => match Format::from_name(f) {
                Some(f) => f,
                None => return Ok(Some(format!("format = \"{f}\" is not one of \"jsonl\", \"json\", \"csv\""))),
            },
            None => match Format::from_path(&path) {
                Some(f) => f,
                None => {
                    return Ok(Some(format!(
                        "{shown}: cannot tell the format from the file's extension; give format = \"jsonl\" | \"json\" | \"csv\""
                    )));
                }
            },
        };
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Ok(Some(format!("{shown}: not a file"))),
            Err(e) => return Ok(Some(format!("{shown}: {e}"))),
        };
        let Some(row_fn) = d.function else {
            return Ok(Some("internal: no row function".into()));
        };
        let skip = d.on_error == "skip";
        let index = self.0.borrow().datasets.len() as u32;
        let limits = lua::limits(lua);
        let (mut i, mut cases, mut skipped) = (0u32, 0u64, Vec::new());
        let mut skipped_n = 0u64;
        let streamed = dataset::stream(&path, format, |pos, row| -> std::result::Result<(), String> {
            i += 1;
            limits.extend(CASE_INSTRUCTIONS + ROW_INSTRUCTIONS, CASE_TIME + Duration::from_secs(ROW_SECONDS));
            let at = format!("{shown}:{}", pos.line);
            let declared = row
                .map_err(|e| format!("{shown}:{e}"))
                .and_then(|json| self.row(lua, &row_fn, json, i, &at, pos, index))
                .and_then(|read| self.0.borrow_mut().add(read).map_err(|e| format!("{at}: {e}")));
            match declared {
                Ok(()) => cases += 1,
                Err(e) if skip => {
                    skipped_n += 1;
                    if skipped.len() < SKIPPED_SHOWN {
                        skipped.push(e);
                    }
                }
                Err(e) => return Err(e),
            }
            Ok(())
        });
        let scan = match streamed {
            Ok(Ok(scan)) => scan,
            // A bad row: the data file's line says where.
            Ok(Err(e)) => return Err(mlua::Error::runtime(e)),
            Err(e) => return Ok(Some(format!("{shown}: cannot read: {e}"))),
        };
        let stamp = meta.modified().ok().map(|m| (scan.bytes, m));
        self.0.borrow_mut().datasets.push(DatasetSpec {
            path: shown,
            abs: path,
            format,
            sha256: scan.sha256,
            bytes: scan.bytes,
            rows: scan.rows,
            cases,
            skipped: skipped_n,
            skipped_rows: skipped,
            headers: scan.headers.unwrap_or_default(),
            stamp,
        });
        Ok(None)
    }
}

impl Loader {
    /// One dataset row through the stdlib's row function (the suite's `map`,
    /// then the case's validation), read into its spec.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        lua: &Lua,
        row_fn: &mlua::Function,
        json: serde_json::Value,
        i: u32,
        at: &str,
        pos: dataset::RowPos,
        index: u32,
    ) -> std::result::Result<ReadCase, String> {
        let limits = lua::limits(lua);
        let seg = Segment {
            instructions: Some(ROW_INSTRUCTIONS),
            deadline: Some(Instant::now() + Duration::from_secs(ROW_SECONDS)),
        };
        let value = convert::to_lua(lua, &json).map_err(|e| format!("{at}: {e}"))?;
        let case = match limits.guard(lua, seg, || row_fn.call::<Table>((value, i, at))) {
            Guarded::Done(Ok(t)) => t,
            Guarded::Done(Err(e)) => return Err(format!("{at}: row {i}: {}", lua::describe(&e))),
            Guarded::Stopped(stop) => return Err(format!("{at}: row {i}: map stopped: {}", stop.describe())),
        };
        let mut read = read_case(&case).map_err(|e| format!("{at}: row {i}: {e}"))?;
        read.spec.location = at.to_string();
        read.spec.source =
            CaseSource::Row { dataset: index, row: i, line: pos.line, offset: pos.offset, length: pos.length };
        Ok(read)
    }
}

use crate::util::names::has_location;

/// The first number in the suite's declared tables that is NaN or infinite,
/// as `file:line: path is NaN`, where `file:line` is the nearest enclosing
/// declaration (the suite, a tool, a case). Functions are not entered: their
/// numbers are checked where they are used.
fn bad_number(
    t: &Table,
    path: &str,
    at: &str,
    depth: usize,
    seen: &mut Vec<*const std::ffi::c_void>,
) -> Option<String> {
    if depth > 24 || seen.contains(&t.to_pointer()) {
        return None;
    }
    seen.push(t.to_pointer());
    // A declaration (a case, a tool) restarts the path at its own name.
    let label = |k: &str| match t.raw_get::<Value>(k) {
        Ok(Value::String(s)) => Some(s.to_string_lossy()),
        _ => None,
    };
    let path = match (label("_where"), label("id"), label("name")) {
        (Some(_), Some(id), _) => format!("case '{id}':"),
        (Some(_), None, Some(name)) if path.starts_with("_tools") => format!("tool '{name}':"),
        _ => path.to_string(),
    };
    let path = path.as_str();
    let here = match t.raw_get::<Value>("_where") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => match t.raw_get::<Value>("where") {
            Ok(Value::String(s)) => s.to_string_lossy(),
            _ => at.to_string(),
        },
    };
    for pair in t.pairs::<Value, Value>() {
        let Ok((k, v)) = pair else { continue };
        let key = match &k {
            Value::String(s) => {
                let s = s.to_string_lossy();
                // Host bookkeeping (`_tool_index`, `_case_index`) repeats `_tools` / `_cases`.
                if s.ends_with("_index") {
                    continue;
                }
                if path.is_empty() {
                    s
                } else if path.ends_with(':') {
                    format!("{path} {s}")
                } else {
                    format!("{path}.{s}")
                }
            }
            Value::Integer(i) => format!("{path}[{i}]"),
            other => format!("{path}[{}]", other.type_name()),
        };
        match v {
            Value::Number(n) if !n.is_finite() => {
                let what = if n.is_nan() { "NaN (0/0)".to_string() } else { format!("{n}") };
                return Some(format!("{here}: {key} is {what}; numbers in a suite must be finite"));
            }
            Value::Table(inner) => {
                if let Some(e) = bad_number(&inner, &key, &here, depth + 1, seen) {
                    return Some(e);
                }
            }
            _ => {}
        }
    }
    None
}

/// A table the DSL normalised, read into its spec type by serde: the type's
/// fields are the one declaration of its keys (an unknown key is refused
/// where the type says `deny_unknown_fields`), its defaults are the type's.
/// Functions in the table stay in Lua (they are left out, not refused).
/// The error names the key (`what.key: …`); the caller adds the
/// declaration's `file:line`.
pub fn from_table<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> std::result::Result<T, String> {
    let options = mlua::serde::DeserializeOptions::new().deny_unsupported_types(false);
    serde_path_to_error::deserialize(mlua::serde::Deserializer::new_with_options(v, options)).map_err(|e| {
        let path = e.path().to_string();
        let inner = match e.into_inner() {
            mlua::Error::DeserializeError(m) => m,
            other => other.to_string(),
        };
        if path == "." { format!("{what}: {inner}") } else { format!("{what}.{path}: {inner}") }
    })
}

/// A case as loading reads it: its spec, the judge specs of its judge
/// checks, and its checks (for what they use; the plan does not keep them).
struct ReadCase {
    spec: CaseSpec,
    /// Each judge check's name and spec.
    judges: Vec<(String, JudgeSpec)>,
    checks: Vec<CheckInfo>,
}

/// A case table, as `suite:case` normalised it, read into its spec.
fn read_case(ct: &Table) -> std::result::Result<ReadCase, String> {
    // Each number's path and line are said before serde sees the table
    // (`bad_number` finds the table's own `_where`).
    if let Some(e) = bad_number(ct, "", "", 0, &mut Vec::new()) {
        return Err(e);
    }
    let c: CaseTable = from_table(Value::Table(ct.clone()), "case")?;
    let checks = c.checks;
    let mut spec = CaseSpec {
        id: c.id,
        split: c.split,
        tags: c.tags,
        difficulty: c.difficulty,
        fixture: c.fixture,
        trials: c.trials,
        trials_min: c.trials_min,
        weight: c.weight,
        tools: c.tools,
        agent: finish_agent(c.agent, true)?.map(Box::new),
        clock: c.clock,
        workdir: c.workdir.map(Box::new),
        user: c.user.map(Box::new),
        checks: checks.len() as u32,
        tests: checks
            .iter()
            .filter_map(|c| c.tests.clone().map(|spec| TestsCheck { name: c.name.clone(), spec }))
            .collect(),
        digest: String::new(),
        location: c.location,
        faults: c.faults,
        reference: c.reference,
        accept_abnormal_end: c.accept_abnormal_end,
        perturb: c.perturb,
        should_abstain: c.should_abstain,
        harden: c.harden,
        source: CaseSource::Declared,
        pending_review: c.review.is_some_and(|r| r.status == crate::spec::synthetic::ReviewStatus::Pending),
    };
    // The digest covers what the plan no longer holds: the input and the checks.
    let declared = serde_json::to_string(&(&spec, &c.input, &checks)).map_err(|e| e.to_string())?;
    spec.digest = sha256_hex(declared.as_bytes());
    let judges = checks.iter().filter_map(|c| Some((c.name.clone(), c.judge.clone()?))).collect();
    Ok(ReadCase { spec, judges, checks })
}

/// `sandbox.max_fixture_mb`, unless `EVALUA_MAX_FIXTURE_MB` overrides it.
fn max_fixture_bytes(sandbox: &SandboxSpec) -> std::result::Result<u64, String> {
    match std::env::var("EVALUA_MAX_FIXTURE_MB") {
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m > 0.0)
            .map(crate::spec::mib)
            .ok_or_else(|| format!("EVALUA_MAX_FIXTURE_MB={v:?} is not a positive number of MiB")),
        Err(_) => Ok(crate::spec::mib(sandbox.max_fixture_mb)),
    }
}

fn read_suite(
    t: &Table,
    path: &Path,
    sources: Arc<Sources>,
    declared: Declared,
) -> std::result::Result<(Suite, Vec<String>), String> {
    // Each number's path and line are said before serde sees the table
    // (`bad_number` finds the tables' own `_where`).
    if let Some(e) = bad_number(t, "", &display_path(path), 0, &mut Vec::new()) {
        return Err(e);
    }
    let mut s: SuiteTable = from_table(Value::Table(t.clone()), "evalua.suite").map_err(|e| {
        // The suite's line, read apart: serde did not finish the table.
        let at = t.raw_get::<String>("_where").unwrap_or_else(|_| display_path(path));
        format!("{at}: {e}")
    })?;
    let location = s.location.take().unwrap_or_else(|| display_path(path));
    // Functions never reach serde (mlua's deserializer leaves them out):
    // whether these two are set is read here.
    let is_function = |k: &str| t.raw_get::<Value>(k).is_ok_and(|v| v.is_function());
    let (trace_adapter, matcher) = (is_function("trace_adapter"), is_function("match"));
    let (agent, agents) = finish_agents(&mut s)?;
    let adversaries = finish_adversaries(&mut s)?;
    let sandbox = s.sandbox;
    let (grade_gates, grade_reexecute) = match s.grade {
        Some(g) => (g.gate, g.reexecute),
        None => (None, false),
    };
    let mut suite = Suite {
        path: path.to_path_buf(),
        dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        name: s.name,
        version: s.version,
        description: s.description,
        trials: s.trials,
        trials_min: s.trials_min,
        undecided_passes: s.undecided.as_deref() == Some("pass"),
        budget: s.budget,
        db: sandbox.db(),
        schema: sandbox.schema.clone(),
        clock: sandbox.clock.clone(),
        workdir: sandbox.workdir.clone(),
        expose: sandbox.expose.clone(),
        network: sandbox.network,
        gates: s.gate,
        grade_gates,
        agent: None,
        agents: Vec::new(),
        default_agent: s.default_agent,
        adversaries,
        hardened: s.hardened,
        grade_reexecute,
        tools: s.tools,
        cases: declared.cases,
        datasets: declared.datasets,
        judges: declared.judges,
        check_tools: declared.check_tools,
        queries: declared.queries,
        sources,
        held_out_max_runs: s.held_out_max_runs,
        skip: s.skip,
        faults: s.faults.unwrap_or_default(),
        perturb: s.perturb,
        max_fixture_bytes: max_fixture_bytes(&sandbox)?,
        keep: sandbox.keep(),
        location,
        monitors: s.monitors.into_iter().map(|m| MonitorSpec { name: m.name, critical: m.critical }).collect(),
        trace_adapter,
        matcher,
        publish: Publish {
            abstention: s.abstention,
            contamination: s.contamination.map(|c| c.sources).unwrap_or_default(),
            exclude: s.exclude,
        },
    };
    suite.agent = agent;
    suite.agents = agents;
    // What failed to declare was reported where it was declared: the names
    // of tools whose `suite:tool` failed are not reported again, and an
    // `agent` that was wrong does not make every case agentless.
    let dropped_tools: Vec<String> = s.dropped.tools.into_keys().collect();
    let agent_dropped = s.dropped.agent && suite.agent.is_none();
    let mut errors = check_tool_names(&suite, &dropped_tools);
    if suite.publish.abstention
        && let Some(t) = suite.tools.iter().find(|t| t.name == crate::spec::ABSTAIN_TOOL)
    {
        errors.push(format!(
            "{}: suite:tool '{}': abstention = true offers model agents a built-in tool of that name; rename this one",
            t.location, t.name
        ));
    }
    errors.extend(check_gate_agents(&suite));
    if !suite.network
        && let Some(a) = suite.agents.iter().find(|a| match &a.spec {
            AgentSpec::Command(c) => c.tools == ToolsVia::Mcp || c.model_proxy.is_some(),
            _ => false,
        })
    {
        errors.push(format!(
            "{}: agent '{}': sandbox.network = false, but it reaches its tools or models over the network; keep the network or use tools = \"protocol\" without model_proxy",
            suite.location, a.name
        ));
    }
    for case in &suite.cases {
        if !suite.network
            && let Some(AgentSpec::Command(c)) = suite.case_agent(case)
            && (c.tools == ToolsVia::Mcp || c.model_proxy.is_some())
        {
            errors.push(format!(
                "{}: case '{}': sandbox.network = false, but its agent reaches its {} over the network; keep the network or use tools = \"protocol\" without model_proxy",
                case.location,
                case.id,
                if c.tools == ToolsVia::Mcp { "MCP server" } else { "model proxy" }
            ));
        }
        if suite.case_agent(case).is_none() && !agent_dropped {
            errors.push(format!(
                "{}: case '{}' has no agent: set `agent` in evalua.suite{{}} or in the case",
                case.location, case.id
            ));
        }
    }
    Ok((suite, errors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::model::{DEFAULT_USER_TURNS, ToolResults};
    use crate::spec::{Budget, Faults, Reference, ToolSpec, UserSpec, WorkdirSpec};

    /// `faults = { tool = { rule, … } | false }` as the DSL normalised it.
    fn faults_spec(v: Option<Value>) -> std::result::Result<Option<Faults>, String> {
        #[derive(serde::Deserialize)]
        #[serde(transparent)]
        struct Read(#[serde(deserialize_with = "crate::spec::fault::read_faults")] Option<Faults>);
        Ok(from_table::<Read>(v.unwrap_or(Value::Nil), "faults")?.0)
    }

    fn table(lua: &Lua, src: &str) -> Value {
        lua.load(format!("return {src}")).eval().expect("a Lua value")
    }

    #[test]
    fn a_count_may_be_a_whole_float_and_an_unknown_key_is_named() {
        let lua = Lua::new();
        let b: Budget = from_table(table(&lua, "{ max_turns = 3.0, max_tokens = 1000, deadline_s = 2.5 }"), "budget")
            .expect("a budget");
        assert_eq!((b.max_turns, b.max_tokens, b.deadline_s), (Some(3), Some(1000), Some(2.5)));
        let e = from_table::<Budget>(table(&lua, "{ max_turns = 3.5 }"), "budget").unwrap_err();
        assert!(e.starts_with("budget.max_turns: must be a whole number"), "{e}");
        let e = from_table::<Budget>(table(&lua, "{ max_turn = 3 }"), "budget").unwrap_err();
        assert!(e.contains("unknown field `max_turn`") && e.contains("max_turns"), "{e}");
        let e = from_table::<Budget>(table(&lua, "{ deadline_s = 0 }"), "budget").unwrap_err();
        assert!(e.starts_with("budget.deadline_s: must be above 0"), "{e}");
    }

    #[test]
    fn the_dsls_own_keys_are_read_and_functions_stay_in_lua() {
        let lua = Lua::new();
        let t: ToolSpec = from_table(
            table(
                &lua,
                r#"{ name = "lookup", description = "", params = { type = "object", properties = {} }, effect = "read",
                     requires = {}, forbidden_in_attack = false, validate = true, ends = false,
                     run = function() end, _where = "s.lua:3" }"#,
            ),
            "suite:tool",
        )
        .expect("a tool");
        assert_eq!(t.location, "s.lua:3");
        assert_eq!(t.params, serde_json::json!({ "type": "object", "properties": {} }));
        let r: Reference = from_table(
            table(&lua, r#"{ calls = 2.0, max_ratio = 2, call_list = { { name = "a" }, { name = "b" } } }"#),
            "r",
        )
        .expect("a reference");
        assert_eq!((r.calls, r.tokens, r.max_ratio), (Some(2), None, 2.0));
        let a: AgentSpec = from_table(
            table(
                &lua,
                r#"{ kind = "anthropic", model = { kind = "model", provider = "anthropic", model = "m" }, max_turns = 3 }"#,
            ),
            "agent",
        )
        .expect("a model agent");
        let AgentSpec::Model(m) = a else { panic!("{a:?}") };
        assert_eq!(
            (m.model.provider, m.max_turns, m.tool_results),
            (crate::spec::Provider::Anthropic, 3, ToolResults::Json)
        );
        let e = from_table::<AgentSpec>(table(&lua, r#"{ kind = "scripted", path = "/a.lua", pth = 1 }"#), "agent")
            .unwrap_err();
        assert!(e.contains("unknown field `pth`"), "{e}");
        let u: UserSpec = from_table(
            table(&lua, r#"{ kind = "llm", profile = "p", goal = "g", model = { kind = "model" } }"#),
            "user",
        )
        .expect("a user");
        let UserSpec::Llm(u) = u else { panic!("{u:?}") };
        assert_eq!(u.max_turns, DEFAULT_USER_TURNS);
        // An empty table is an empty list, also where serde buffers the table (a tagged enum).
        let c: AgentSpec = from_table(
            table(&lua, r#"{ kind = "command", cmd = { "a" }, env = {}, setup = {}, model_proxy = true }"#),
            "agent",
        )
        .expect("a command agent");
        let AgentSpec::Command(c) = c else { panic!("{c:?}") };
        assert_eq!((c.env.len(), c.setup, c.tools), (0, Some(vec![]), ToolsVia::Protocol));
        assert!(c.model_proxy.is_some_and(|p| p.openai.is_some() && p.anthropic.is_some()));
        // Faults: a rule list per tool (its kind's defaults filled in), or false.
        let f = faults_spec(Some(table(
            &lua,
            r#"{ lookup = { { kind = "rate_limit", on_call = { 1 } } }, other = false }"#,
        )))
        .expect("faults")
        .expect("some faults");
        let rule = &f["lookup"].as_ref().expect("rules")[0];
        assert_eq!(
            (rule.on_call.clone(), rule.retry_after_s),
            (Some(vec![1]), Some(crate::spec::fault::DEFAULT_RETRY_AFTER_S))
        );
        assert_eq!(f["other"], None);
        assert_eq!(faults_spec(Some(table(&lua, "{}"))).expect("faults"), Some(Faults::new()));
        let w: WorkdirSpec =
            from_table(table(&lua, r#"{ git = "/b.bundle", rev = "v1" }"#), "workdir").expect("a work dir");
        assert_eq!(w, WorkdirSpec::Git { bundle: "/b.bundle".into(), rev: Some("v1".into()) });
    }

    #[test]
    fn a_checks_options_are_read_by_its_kind_and_a_cases_free_data_is_not_read() {
        let lua = Lua::new();
        let c: CheckInfo = from_table(
            table(
                &lua,
                r#"{ name = "tests", critical = false, kind = "tests", run = function() end, where = "s.lua:4",
                     options = { runner = { "pytest" }, fail_to_pass = { "t::a" }, pass_to_pass = {}, timeout_s = 60 } }"#,
            ),
            "check",
        )
        .expect("a tests check");
        let tests = c.tests.expect("its options");
        assert_eq!(
            (tests.runner, tests.pass_to_pass.len(), c.location),
            (vec!["pytest".to_string()], 0, Some("s.lua:4".into()))
        );
        // Another kind's options stay in Lua.
        let c: CheckInfo =
            from_table(table(&lua, r#"{ name = "n", critical = true, kind = "sql", options = { x = 1 } }"#), "check")
                .expect("an sql check");
        assert!(c.tests.is_none() && c.critical);
        let e = from_table::<CheckInfo>(
            table(&lua, r#"{ name = "tests", critical = false, kind = "tests", options = { runner = {} } }"#),
            "check",
        )
        .unwrap_err();
        assert!(e.contains("'runner' must be a non-empty list"), "{e}");
        let e =
            from_table::<CheckInfo>(table(&lua, r#"{ name = "n", critical = false, nmae = 1 }"#), "check").unwrap_err();
        assert!(e.contains("unknown field `nmae`"), "{e}");

        // A case's metadata may be any Lua value, even one that holds itself.
        let case = lua
            .load(
                r#"local m = { note = "x" }; m.self = m
                   return { id = "a", split = "dev", tags = {}, input = "hi", weight = 1, checks = {},
                            metadata = m, _where = "s.lua:9" }"#,
            )
            .eval::<Value>()
            .expect("a case table");
        let c: CaseTable = from_table(case, "case").expect("a case");
        assert_eq!((c.id.as_str(), c.location.as_str(), c.checks.len()), ("a", "s.lua:9", 0));
    }
}
