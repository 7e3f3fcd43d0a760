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
use serde_json::Value as Json;

use super::api::{self, declare};
use super::engine::{self as lua, Segment, StateConfig, convert, limits::Guarded};
use crate::error::{Error, Result};
use crate::spec::gate;
use crate::spec::model::{DEFAULT_AGENT_TURNS, DEFAULT_USER_TURNS, ToolResults};
use crate::spec::{
    AgentIo, AgentSpec, Budget, CaseSource, CaseSpec, CheckInfo, CommandAgentSpec, DEFAULT_AGENT_NAME, DatasetSpec,
    DbSpec, FaultRule, Faults, JudgeSpec, KeepCaps, Mention, ModelAgentSpec, ModelSpec, MonitorSpec, NamedAgent,
    ProxySpec, QueryUse, Sources, Suite, SuiteJudge, TestsCheck, TestsSpec, ToolSpec, ToolsVia, UserSpec,
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
    match read_suite(&lua, &t, &path, sources, declared) {
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
        let read = match read_case(lua, &case) {
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
        let mut read = read_case(lua, &case).map_err(|e| format!("{at}: row {i}: {e}"))?;
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

fn opt<T: mlua::FromLua>(t: &Table, k: &str) -> std::result::Result<Option<T>, String> {
    t.get::<Option<T>>(k).map_err(|e| format!("'{k}': {}", lua::describe(&e)))
}

fn strings(t: &Table, k: &str) -> std::result::Result<Vec<String>, String> {
    Ok(opt::<Vec<String>>(t, k)?.unwrap_or_default())
}

/// Model endpoint options (`evalua.model{}` and the same keys elsewhere), as
/// the DSL normalised them.
fn model_spec(lua: &Lua, v: &Value) -> std::result::Result<ModelSpec, String> {
    let j = convert::to_json(lua, v)?;
    serde_json::from_value(j).map_err(|e| format!("model options: {e}"))
}

fn read_agent(lua: &Lua, v: Option<Table>) -> std::result::Result<Option<AgentSpec>, String> {
    read_agent_with(lua, v, true)
}

/// An agent declaration; `resolve`: a model agent's endpoint must resolve now
/// (not for a named agent that is not the default: it resolves when a run
/// picks it, so a suite whose `model` agent needs a key still loads without one).
fn read_agent_with(lua: &Lua, v: Option<Table>, resolve: bool) -> std::result::Result<Option<AgentSpec>, String> {
    let Some(a) = v else { return Ok(None) };
    let kind: String = opt(&a, "kind")?.unwrap_or_default();
    match kind.as_str() {
        "scripted" => Ok(Some(AgentSpec::Scripted { path: opt::<String>(&a, "path")?.map(PathBuf::from) })),
        "command" => Ok(Some(AgentSpec::Command(CommandAgentSpec {
            cmd: strings(&a, "cmd")?,
            env: strings(&a, "env")?,
            setup: opt::<Vec<String>>(&a, "setup")?,
            tools: match opt::<String>(&a, "tools")?.as_deref() {
                None | Some("protocol") => ToolsVia::Protocol,
                Some("mcp") => ToolsVia::Mcp,
                Some(other) => return Err(format!("agent tools = '{other}' is not supported")),
            },
            io: match opt::<String>(&a, "io")?.as_deref() {
                None | Some("jsonl") => AgentIo::Jsonl,
                Some("plain") => AgentIo::Plain,
                Some(other) => return Err(format!("agent io = '{other}' is not supported")),
            },
            model_proxy: proxy_spec(lua, &a)?,
        }))),
        "replay" => Ok(Some(AgentSpec::Replay { path: PathBuf::from(opt::<String>(&a, "path")?.unwrap_or_default()) })),
        other => match crate::spec::Provider::from_name(other) {
            Some(p) => Ok(Some(AgentSpec::Model(model_agent(lua, &a, p, resolve)?))),
            None => Err(format!("agent kind '{other}' is not supported")),
        },
    }
}

/// The suite's default agent and every agent by name (see `named_agents` in
/// the stdlib): `agent = …` alone is one agent named "default".
fn read_agents(lua: &Lua, t: &Table) -> std::result::Result<(Option<AgentSpec>, Vec<NamedAgent>), String> {
    let default: Option<String> = opt(t, "default_agent")?;
    let Some(named) = opt::<Table>(t, "_agents")? else {
        let agent = read_agent(lua, opt(t, "agent")?)?;
        let agents =
            agent.iter().map(|a| NamedAgent { name: DEFAULT_AGENT_NAME.to_string(), spec: a.clone() }).collect();
        return Ok((agent, agents));
    };
    let mut agents = Vec::new();
    for pair in named.pairs::<String, Table>() {
        let (name, a) = pair.map_err(|e| format!("agents: {e}"))?;
        let is_default = default.as_deref() == Some(name.as_str());
        let spec = read_agent_with(lua, Some(a), is_default)
            .map_err(|e| format!("agent '{name}': {e}"))?
            .ok_or_else(|| format!("agent '{name}': not an agent"))?;
        agents.push(NamedAgent { name, spec });
    }
    agents.sort_by(|a, b| a.name.cmp(&b.name));
    let agent = default.as_deref().and_then(|d| agents.iter().find(|a| a.name == d)).map(|a| a.spec.clone());
    Ok((agent, agents))
}

/// `evalua.agent.openai{}` / `anthropic{}`: the endpoint must resolve now
/// (a model named, a key variable where one is needed), not in every trial.
fn model_agent(
    lua: &Lua,
    t: &Table,
    provider: crate::spec::Provider,
    resolve: bool,
) -> std::result::Result<ModelAgentSpec, String> {
    let what = format!("evalua.agent.{provider}");
    let mut model = model_spec(lua, &Value::Table(t.clone())).map_err(|e| format!("{what}: {e}"))?;
    model.provider = provider;
    if resolve {
        crate::model::Endpoint::resolve(&model, true).map_err(|e| format!("{what}: {e}"))?;
    }
    let (system, system_path) = match opt::<String>(t, "system_path")? {
        Some(p) => {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| format!("{what}: cannot read the system prompt {}: {e}", display_path(p.as_ref())))?;
            (Some(text), Some(display_path(Path::new(&p))))
        }
        None => (opt::<String>(t, "system")?, None),
    };
    Ok(ModelAgentSpec {
        system_sha256: system.as_ref().map(|s| sha256_hex(s.as_bytes())),
        model,
        system,
        system_path,
        max_turns: opt::<u32>(t, "max_turns")?.unwrap_or(DEFAULT_AGENT_TURNS),
        tool_results: match opt::<String>(t, "tool_results")?.as_deref() {
            None | Some("json") => ToolResults::Json,
            Some("text") => ToolResults::Text,
            Some(other) => return Err(format!("{what}: tool_results = '{other}' is not \"json\" or \"text\"")),
        },
        calls_per_step: opt::<u32>(t, "calls_per_step")?,
    })
}

/// A command agent's `model_proxy`: `true` (both official endpoints) or one
/// provider's options.
fn proxy_spec(lua: &Lua, agent: &Table) -> std::result::Result<Option<ProxySpec>, String> {
    let what = "evalua.agent.command: model_proxy";
    match opt::<Value>(agent, "model_proxy")?.unwrap_or(Value::Nil) {
        Value::Nil | Value::Boolean(false) => Ok(None),
        Value::Boolean(true) => Ok(Some(ProxySpec {
            openai: Some(ModelSpec::for_provider(crate::spec::Provider::OpenAI)),
            anthropic: Some(ModelSpec::for_provider(crate::spec::Provider::Anthropic)),
        })),
        t @ Value::Table(_) => {
            let spec = model_spec(lua, &t).map_err(|e| format!("{what}: {e}"))?;
            crate::model::Endpoint::resolve(&spec, false).map_err(|e| format!("{what}: {e}"))?;
            Ok(Some(match spec.provider {
                crate::spec::Provider::Anthropic => ProxySpec { openai: None, anthropic: Some(spec) },
                crate::spec::Provider::OpenAI => ProxySpec { openai: Some(spec), anthropic: None },
            }))
        }
        other => Err(format!("{what} must be true or model options, got {}", other.type_name())),
    }
}

/// A case's `user` (`evalua.user.script{}` / `evalua.user.llm{}`).
fn user_spec(lua: &Lua, u: &Table) -> std::result::Result<UserSpec, String> {
    let kind: String = opt(u, "kind")?.unwrap_or_default();
    match kind.as_str() {
        "script" => Ok(UserSpec::Script { turns: strings(u, "turns")? }),
        "llm" => Ok(UserSpec::Llm {
            profile: opt(u, "profile")?.unwrap_or_default(),
            goal: opt(u, "goal")?.unwrap_or_default(),
            model: Box::new(match opt::<Value>(u, "model")? {
                Some(m @ Value::Table(_)) => model_spec(lua, &m).map_err(|e| format!("evalua.user.llm: {e}"))?,
                _ => ModelSpec::default(),
            }),
            max_turns: opt::<u32>(u, "max_turns")?.unwrap_or(DEFAULT_USER_TURNS),
            system: opt(u, "system")?,
            opening: opt(u, "opening")?,
        }),
        other => Err(format!("unknown user kind '{other}'")),
    }
}

/// `check.tests{}`'s options, as the stdlib normalised them.
fn tests_spec(v: Value) -> std::result::Result<TestsSpec, String> {
    let spec: TestsSpec = from_table(v, "check.tests")?;
    if spec.runner.is_empty() {
        return Err("check.tests: 'runner' must be a non-empty list".into());
    }
    Ok(spec)
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

/// A judge check's `judge` table.
pub fn judge_spec(lua: &Lua, v: &Value) -> std::result::Result<JudgeSpec, String> {
    let j = convert::to_json(lua, v)?;
    serde_json::from_value(j).map_err(|e| format!("judge: bad spec: {e}"))
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
fn read_case(lua: &Lua, ct: &Table) -> std::result::Result<ReadCase, String> {
    let location = opt::<String>(ct, "_where")?.unwrap_or_default();
    if let Some(e) = bad_number(ct, "", &location, 0, &mut Vec::new()) {
        return Err(e);
    }
    let mut checks = Vec::new();
    let checks_t: Table = ct.get("checks").map_err(|e| e.to_string())?;
    for c in checks_t.sequence_values::<Table>() {
        let c = c.map_err(|e| e.to_string())?;
        let kind: Option<String> = opt(&c, "kind")?;
        let tests = match (kind.as_deref(), opt::<Value>(&c, "options")?) {
            (Some("tests"), Some(v)) => Some(tests_spec(v)?),
            _ => None,
        };
        checks.push(CheckInfo {
            name: c.get("name").map_err(|e| e.to_string())?,
            critical: c.get("critical").map_err(|e| e.to_string())?,
            kind,
            tests,
            judge: match c.get::<Value>("judge").map_err(|e| e.to_string())? {
                Value::Nil => None,
                v => Some(judge_spec(lua, &v)?),
            },
            tools: strings(&c, "tools")?,
            sql: strings(&c, "sql")?,
            location: opt(&c, "where")?,
        });
    }
    let input: String = ct.get("input").map_err(|e| e.to_string())?;
    let tools_subset: Option<Vec<String>> = opt(ct, "tools")?;
    let mut spec = CaseSpec {
        id: ct.get("id").map_err(|e| e.to_string())?,
        split: ct.get("split").map_err(|e| e.to_string())?,
        tags: strings(ct, "tags")?,
        difficulty: opt(ct, "difficulty")?,
        fixture: opt::<String>(ct, "fixture")?.map(PathBuf::from),
        trials: opt::<f64>(ct, "trials")?.map(|v| v as u32),
        weight: ct.get("weight").map_err(|e| e.to_string())?,
        tools: tools_subset,
        agent: read_agent(lua, opt(ct, "agent")?)?.map(Box::new),
        clock: opt(ct, "clock")?,
        workdir: from_table(ct.get("workdir").map_err(|e| e.to_string())?, "workdir")?,
        user: opt::<Table>(ct, "user")?.map(|u| user_spec(lua, &u)).transpose()?.map(Box::new),
        checks: checks.len() as u32,
        tests: checks
            .iter()
            .filter_map(|c| c.tests.clone().map(|spec| TestsCheck { name: c.name.clone(), spec }))
            .collect(),
        digest: String::new(),
        location,
        faults: faults_spec(lua, opt(ct, "faults")?)?,
        reference: from_table(ct.get("reference").map_err(|e| e.to_string())?, "reference")?,
        source: CaseSource::Declared,
    };
    // The digest covers what the plan no longer holds: the input and the checks.
    let declared = serde_json::to_string(&(&spec, &input, &checks)).map_err(|e| e.to_string())?;
    spec.digest = sha256_hex(declared.as_bytes());
    let judges = checks.iter().filter_map(|c| Some((c.name.clone(), c.judge.clone()?))).collect();
    Ok(ReadCase { spec, judges, checks })
}

/// `faults = { tool = { rule, … } | false }` as the DSL normalised it.
fn faults_spec(lua: &Lua, v: Option<Value>) -> std::result::Result<Option<Faults>, String> {
    let Some(v) = v else { return Ok(None) };
    let j = convert::to_json(lua, &v)?;
    if j.as_array().is_some_and(|a| a.is_empty()) {
        return Ok(Some(Faults::new()));
    }
    let map = j.as_object().ok_or("faults: expected a table of tool = fault")?;
    let mut out = Faults::new();
    for (tool, rules) in map {
        let rules = match rules {
            Json::Bool(false) => None,
            r => Some(
                serde_json::from_value::<Vec<FaultRule>>(r.clone())
                    .map_err(|e| format!("faults.{tool}: {e}"))?
                    .into_iter()
                    .map(FaultRule::with_defaults)
                    .collect(),
            ),
        };
        out.insert(tool.clone(), rules);
    }
    Ok(Some(out))
}

/// Every tool name the suite mentions outside `suite:tool` (a tool's
/// `requires`, a check, a fault rule) must name a declared tool: each unknown
/// name is its own error, at the line that mentions it, with the nearest
/// declared name. Names of tools whose declaration failed (`dropped`) were
/// reported there and are not reported again.
fn check_tool_names(suite: &Suite, dropped: &[String]) -> Vec<String> {
    let known: Vec<&str> = suite.tools.iter().map(|t| t.name.as_str()).collect();
    let mut errors = Vec::new();
    let mut unknown = |at: &str, what: &str, name: &str| {
        if known.contains(&name) || dropped.iter().any(|d| d == name) {
            return;
        }
        // A tool whose declaration failed is still what the user meant.
        let near =
            crate::util::names::did_you_mean(name, known.iter().copied().chain(dropped.iter().map(String::as_str)));
        let list = if known.is_empty() { "none declared".to_string() } else { known.join(", ") };
        errors.push(format!("{at}: {what} names an unknown tool '{name}'{near}; the suite's tools: {list}"));
    };
    for t in &suite.tools {
        let at = if t.location.is_empty() { suite.location.as_str() } else { t.location.as_str() };
        for r in &t.requires {
            unknown(at, &format!("tool '{}': 'requires'", t.name), r);
        }
    }
    for name in suite.faults.keys() {
        unknown(&suite.location, "'faults'", name);
    }
    for case in &suite.cases {
        for name in case.faults.iter().flat_map(|f| f.keys()) {
            unknown(&case.location, &format!("case '{}': 'faults'", case.id), name);
        }
    }
    for m in &suite.check_tools {
        unknown(&m.at, &m.what, &m.name);
    }
    errors
}

/// Gates that name agents (`pass^3@B`, `delta pass^1 B-A`) name agents of
/// the suite: a misspelt name would make a gate no run can decide.
fn check_gate_agents(suite: &Suite) -> Vec<String> {
    let names: Vec<&str> = suite.agents.iter().map(|a| a.name.as_str()).collect();
    let list = || if names.is_empty() { "none declared".to_string() } else { names.join(", ") };
    let mut errors = Vec::new();
    for g in &suite.gates {
        match &g.scope {
            gate::Scope::Run => {}
            gate::Scope::Agent(a) if names.contains(&a.as_str()) => {}
            gate::Scope::Agent(a) => errors.push(format!(
                "{}: evalua.suite.gate: '{}' names agent '{a}', which the suite does not declare; its agents: {}",
                suite.location,
                g.name,
                list()
            )),
            gate::Scope::Delta { pair } => {
                if gate::Scope::delta_pair(pair, &names).is_none() {
                    errors.push(format!(
                        "{}: evalua.suite.gate: '{}' must name two different agents of the suite as CANDIDATE-BASE; its agents: {}",
                        suite.location,
                        g.name,
                        list()
                    ));
                }
            }
        }
    }
    errors
}

/// The default of `sandbox.max_fixture_mb` (overridden by `EVALUA_MAX_FIXTURE_MB`).
pub const DEFAULT_MAX_FIXTURE_MB: f64 = 64.0;

fn max_fixture_bytes(sandbox: &Table) -> std::result::Result<u64, String> {
    let from_env = match std::env::var("EVALUA_MAX_FIXTURE_MB") {
        Ok(v) => Some(
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|m| m.is_finite() && *m > 0.0)
                .ok_or_else(|| format!("EVALUA_MAX_FIXTURE_MB={v:?} is not a positive number of MiB"))?,
        ),
        Err(_) => None,
    };
    let mb = match from_env {
        Some(m) => m,
        None => opt::<f64>(sandbox, "max_fixture_mb")?.unwrap_or(DEFAULT_MAX_FIXTURE_MB),
    };
    Ok((mb * 1024.0 * 1024.0) as u64)
}

/// `sandbox.max_file_mb` and `sandbox.max_trial_mb` (validated by the stdlib).
fn keep_caps(sandbox: &Table) -> std::result::Result<KeepCaps, String> {
    let mb = |k: &str, default: u64| -> std::result::Result<u64, String> {
        Ok(opt::<f64>(sandbox, k)?.map(|m| (m * 1024.0 * 1024.0) as u64).unwrap_or(default << 20))
    };
    Ok(KeepCaps {
        file_bytes: mb("max_file_mb", crate::spec::DEFAULT_MAX_FILE_MB)?,
        trial_bytes: mb("max_trial_mb", crate::spec::DEFAULT_MAX_TRIAL_MB)?,
    })
}

fn read_suite(
    lua: &Lua,
    t: &Table,
    path: &Path,
    sources: Arc<Sources>,
    declared: Declared,
) -> std::result::Result<(Suite, Vec<String>), String> {
    let location = opt::<String>(t, "_where")?.unwrap_or_else(|| display_path(path));
    if let Some(e) = bad_number(t, "", &location, 0, &mut Vec::new()) {
        return Err(e);
    }
    let budget: Budget =
        from_table(t.get("budget").map_err(|e| e.to_string())?, "budget").map_err(|e| format!("{location}: {e}"))?;
    let sandbox: Table = t.get("sandbox").map_err(|e| e.to_string())?;
    let gate_v: Value = t.get("gate").map_err(|e| e.to_string())?;
    let gates = gate::parse(&convert::to_json(lua, &gate_v)?)?;
    let grade_gates = match opt::<Table>(t, "grade")? {
        Some(g) => match g.get::<Value>("gate").map_err(|e| e.to_string())? {
            Value::Nil => None,
            v => Some(gate::parse(&convert::to_json(lua, &v)?)?),
        },
        None => None,
    };

    let mut tools = Vec::new();
    let tools_t: Table = t.get("_tools").map_err(|e| e.to_string())?;
    for tt in tools_t.sequence_values::<Table>() {
        let tt = tt.map_err(|e| e.to_string())?;
        let at: Option<String> = tt.raw_get("_where").unwrap_or_default();
        let tool = from_table::<ToolSpec>(Value::Table(tt), "suite:tool");
        tools.push(tool.map_err(|e| at.map_or_else(|| e.clone(), |at| format!("{at}: {e}")))?);
    }

    let mut monitors = Vec::new();
    let monitors_t: Table = t.get("_monitors").map_err(|e| e.to_string())?;
    for m in monitors_t.sequence_values::<Table>() {
        let m = m.map_err(|e| e.to_string())?;
        monitors.push(MonitorSpec {
            name: m.get("name").map_err(|e| e.to_string())?,
            critical: m.get("critical").map_err(|e| e.to_string())?,
        });
    }

    let (agent, agents) = read_agents(lua, t)?;
    let mut suite = Suite {
        path: path.to_path_buf(),
        dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        name: t.get("name").map_err(|e| e.to_string())?,
        version: opt(t, "version")?,
        description: opt(t, "description")?,
        trials: opt::<f64>(t, "trials")?.map(|v| v as u32).unwrap_or(1),
        budget,
        db: match opt::<String>(&sandbox, "db")?.as_deref() {
            Some("postgres") => DbSpec::Postgres {
                url_env: opt::<String>(&sandbox, "url_env")?.unwrap_or_else(|| "EVALUA_PG_URL".into()),
            },
            _ => DbSpec::Sqlite,
        },
        schema: opt::<String>(&sandbox, "schema")?.map(PathBuf::from),
        clock: opt(&sandbox, "clock")?,
        workdir: from_table(sandbox.get("workdir").map_err(|e| e.to_string())?, "sandbox.workdir")?,
        expose: opt::<Vec<String>>(&sandbox, "expose")?.unwrap_or_default().into_iter().map(PathBuf::from).collect(),
        network: opt::<bool>(&sandbox, "network")?.unwrap_or(true),
        gates,
        grade_gates,
        agent: None,
        agents: Vec::new(),
        default_agent: opt::<String>(t, "default_agent")?,
        grade_reexecute: match opt::<Table>(t, "grade")? {
            Some(g) => opt::<bool>(&g, "reexecute")?.unwrap_or(false),
            None => false,
        },
        tools,
        cases: declared.cases,
        datasets: declared.datasets,
        judges: declared.judges,
        check_tools: declared.check_tools,
        queries: declared.queries,
        sources,
        held_out_max_runs: opt::<u32>(t, "held_out_max_runs")?.unwrap_or(crate::spec::DEFAULT_HELD_OUT_MAX_RUNS),
        skip: opt::<Value>(t, "skip")?.and_then(|v| match v {
            Value::String(s) => Some(s.to_string_lossy()),
            _ => None,
        }),
        faults: faults_spec(lua, opt(t, "faults")?)?.unwrap_or_default(),
        max_fixture_bytes: max_fixture_bytes(&sandbox)?,
        keep: keep_caps(&sandbox)?,
        location,
        monitors,
        trace_adapter: opt::<mlua::Function>(t, "trace_adapter")?.is_some(),
        matcher: opt::<mlua::Function>(t, "match")?.is_some(),
    };
    suite.agent = agent;
    suite.agents = agents;
    // What failed to declare was reported where it was declared: the names
    // of tools whose `suite:tool` failed are not reported again, and an
    // `agent` that was wrong does not make every case agentless.
    let dropped: Option<Table> = opt(t, "_dropped")?;
    let dropped_tools: Vec<String> = match dropped.as_ref().map(|d| d.get::<Option<Table>>("tools")) {
        Some(Ok(Some(tools))) => tools.pairs::<String, Value>().filter_map(|p| p.ok().map(|(k, _)| k)).collect(),
        _ => Vec::new(),
    };
    let agent_dropped =
        dropped.as_ref().is_some_and(|d| d.get::<bool>("agent").unwrap_or(false)) && suite.agent.is_none();
    let mut errors = check_tool_names(&suite, &dropped_tools);
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
