//! Loading a suite: run the Lua file in a sandboxed state (declaring only) and
//! read the returned suite into typed structs the host plans with.
//! Trials later re-run the same file in their own fresh state to get the
//! functions (tool handlers, checks, scripted agents) back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Lua, Table, Value};
use serde::Serialize;
use serde_json::Value as Json;

use crate::error::{Result, UserError};
use crate::gate::{self, Gate};
use crate::lua::{self, Segment, Sources, StateConfig, convert, display_path, limits::Guarded};

/// Limits on loading a suite file.
const LOAD_INSTRUCTIONS: u64 = 200_000_000;
const LOAD_SECONDS: u64 = 20;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Budget {
    pub deadline_s: Option<f64>,
    pub max_tool_calls: Option<u32>,
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub params: Json,
    pub effect: String,
    pub requires: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentSpec {
    /// A scripted agent: a Lua file, or a function defined in the suite.
    Scripted { path: Option<PathBuf> },
    /// A program speaking JSON Lines (SPEC §4), one process per trial.
    Command {
        cmd: Vec<String>,
        env: Vec<String>,
        setup: Option<Vec<String>>,
        tools: ToolsVia,
        io: AgentIo,
        /// `model_proxy`: the endpoints the harness's model proxy forwards to.
        #[serde(skip_serializing_if = "Option::is_none")]
        model_proxy: Option<crate::model::proxy::ProxySpec>,
    },
    /// A recorded trace's tool calls, fed back through the executor.
    Replay { path: PathBuf },
    /// A model-driven tool loop in the host (`evalua.agent.openai` / `anthropic`).
    Model(crate::agent::model::ModelAgent),
}

/// How a command agent reaches the case's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolsVia {
    /// `tool_call` / `tool_result` lines of the JSON Lines protocol.
    #[default]
    Protocol,
    /// An MCP server in the harness (streamable HTTP on 127.0.0.1), at `EVALUA_MCP_URL`.
    Mcp,
}

/// How a command agent's task input and final answer travel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentIo {
    /// `start` … `final` JSON Lines on stdin/stdout.
    #[default]
    Jsonl,
    /// The input as the last argument; the whole stdout, on exit 0, is the answer.
    Plain,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckInfo {
    pub name: String,
    pub critical: bool,
    /// The check's kind (`"tests"`, `"sql"`, ...) when it comes from `evalua.check`.
    pub kind: Option<String>,
    /// Options the host needs before any trial (`check.tests`: validated on the initial tree).
    pub options: Option<Json>,
    /// A judge check's spec (`judge.rubric`, `judge.pairwise`): models, criteria.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<Json>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseSpec {
    pub id: String,
    pub split: String,
    pub tags: Vec<String>,
    pub difficulty: Option<String>,
    pub input: String,
    pub fixture: Option<PathBuf>,
    pub trials: Option<u32>,
    pub weight: f64,
    pub tools: Option<Vec<String>>,
    pub agent: Option<AgentSpec>,
    pub clock: Option<String>,
    /// The case's own work-dir fixture (overrides the suite's).
    pub workdir: Option<crate::workdir::WorkdirSpec>,
    pub checks: Vec<CheckInfo>,
    /// `file:line` where the case was declared.
    pub location: String,
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub trials: u32,
    pub budget: Budget,
    pub schema: Option<PathBuf>,
    pub clock: Option<String>,
    /// `sandbox.workdir`: the trials' initial work tree.
    pub workdir: Option<crate::workdir::WorkdirSpec>,
    pub gates: Vec<Gate>,
    pub agent: Option<AgentSpec>,
    pub tools: Vec<ToolSpec>,
    pub cases: Vec<CaseSpec>,
    pub sources: Arc<Sources>,
    /// `skip = "why"` in evalua.suite{}: `evalua run` skips the suite (exit 0) saying why.
    pub skip: Option<String>,
}

impl Suite {
    /// The case's work-dir fixture: its own, else the suite's.
    pub fn case_workdir<'a>(&'a self, case: &'a CaseSpec) -> Option<&'a crate::workdir::WorkdirSpec> {
        case.workdir.as_ref().or(self.workdir.as_ref())
    }

    pub fn case_agent<'a>(&'a self, case: &'a CaseSpec) -> Option<&'a AgentSpec> {
        case.agent.as_ref().or(self.agent.as_ref())
    }
}

pub fn state_config(path: &Path, sources: Arc<Sources>, clock: i64, validate: bool) -> StateConfig {
    StateConfig { suite_dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(), sources, clock, validate }
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
        Guarded::Done(Err(e)) => return Err(lua::describe(&e)),
        Guarded::Stopped(stop) => {
            return Err(format!("{}: loading the suite stopped: {}", display_path(path), stop.describe()));
        }
    };
    match value {
        Value::Table(t) if t.raw_get::<Value>("_cases").map(|v| v.is_table()).unwrap_or(false) => Ok(t),
        _ => Err(format!(
            "{}: the suite file must end with `return suite` (the value of evalua.suite{{...}})",
            display_path(path)
        )),
    }
}

/// Load and validate a suite file.
pub fn load(path: &Path) -> Result<Suite> {
    let path = std::path::absolute(path).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    if !path.is_file() {
        return Err(UserError(format!("{}: no such suite file", display_path(&path))));
    }
    let sources = Arc::new(Sources::default());
    let lua = lua::new_state(state_config(&path, sources.clone(), 0, true))
        .map_err(|e| UserError(format!("cannot create a Lua state: {e}")))?;
    let t = eval_suite(&lua, &path).map_err(UserError)?;
    read_suite(&lua, &t, &path, sources).map_err(|e| UserError(format!("{}: {e}", display_path(&path))))
}

fn opt<T: mlua::FromLua>(t: &Table, k: &str) -> std::result::Result<Option<T>, String> {
    t.get::<Option<T>>(k).map_err(|e| format!("'{k}': {}", lua::describe(&e)))
}

fn strings(t: &Table, k: &str) -> std::result::Result<Vec<String>, String> {
    Ok(opt::<Vec<String>>(t, k)?.unwrap_or_default())
}

fn read_agent(lua: &Lua, v: Option<Table>) -> std::result::Result<Option<AgentSpec>, String> {
    let Some(a) = v else { return Ok(None) };
    let kind: String = opt(&a, "kind")?.unwrap_or_default();
    match kind.as_str() {
        "scripted" => Ok(Some(AgentSpec::Scripted { path: opt::<String>(&a, "path")?.map(PathBuf::from) })),
        "command" => Ok(Some(AgentSpec::Command {
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
            model_proxy: crate::model::proxy::ProxySpec::read(lua, &a)?,
        })),
        "replay" => Ok(Some(AgentSpec::Replay { path: PathBuf::from(opt::<String>(&a, "path")?.unwrap_or_default()) })),
        "openai" | "anthropic" => Ok(Some(AgentSpec::Model(crate::agent::model::ModelAgent::read(lua, &a)?))),
        other => Err(format!("agent kind '{other}' is not supported")),
    }
}

fn read_suite(lua: &Lua, t: &Table, path: &Path, sources: Arc<Sources>) -> std::result::Result<Suite, String> {
    let budget_t: Table = t.get("budget").map_err(|e| e.to_string())?;
    let budget = Budget {
        deadline_s: opt(&budget_t, "deadline_s")?,
        max_tool_calls: opt::<f64>(&budget_t, "max_tool_calls")?.map(|v| v as u32),
        max_turns: opt::<f64>(&budget_t, "max_turns")?.map(|v| v as u32),
        max_tokens: opt::<f64>(&budget_t, "max_tokens")?.map(|v| v as u64),
        max_cost_usd: opt(&budget_t, "max_cost_usd")?,
    };
    let sandbox: Table = t.get("sandbox").map_err(|e| e.to_string())?;
    let gate_v: Value = t.get("gate").map_err(|e| e.to_string())?;
    let gates = gate::parse(&convert::to_json(lua, &gate_v)?)?;

    let mut tools = Vec::new();
    let tools_t: Table = t.get("_tools").map_err(|e| e.to_string())?;
    for tt in tools_t.sequence_values::<Table>() {
        let tt = tt.map_err(|e| e.to_string())?;
        let params: Value = tt.get("params").map_err(|e| e.to_string())?;
        tools.push(ToolSpec {
            name: tt.get("name").map_err(|e| e.to_string())?,
            description: tt.get("description").map_err(|e| e.to_string())?,
            params: convert::to_json(lua, &params)?,
            effect: tt.get("effect").map_err(|e| e.to_string())?,
            requires: strings(&tt, "requires")?,
        });
    }

    let mut cases = Vec::new();
    let cases_t: Table = t.get("_cases").map_err(|e| e.to_string())?;
    for ct in cases_t.sequence_values::<Table>() {
        let ct = ct.map_err(|e| e.to_string())?;
        let mut checks = Vec::new();
        let checks_t: Table = ct.get("checks").map_err(|e| e.to_string())?;
        for c in checks_t.sequence_values::<Table>() {
            let c = c.map_err(|e| e.to_string())?;
            let kind: Option<String> = opt(&c, "kind")?;
            let options = match (kind.as_deref(), opt::<Value>(&c, "options")?) {
                (Some("tests"), Some(v)) => Some(convert::to_json(lua, &v)?),
                _ => None,
            };
            checks.push(CheckInfo {
                name: c.get("name").map_err(|e| e.to_string())?,
                critical: c.get("critical").map_err(|e| e.to_string())?,
                kind,
                options,
                judge: match c.get::<Value>("judge").map_err(|e| e.to_string())? {
                    Value::Nil => None,
                    v => Some(convert::to_json(lua, &v)?),
                },
            });
        }
        let tools_subset: Option<Vec<String>> = opt(&ct, "tools")?;
        cases.push(CaseSpec {
            id: ct.get("id").map_err(|e| e.to_string())?,
            split: ct.get("split").map_err(|e| e.to_string())?,
            tags: strings(&ct, "tags")?,
            difficulty: opt(&ct, "difficulty")?,
            input: ct.get("input").map_err(|e| e.to_string())?,
            fixture: opt::<String>(&ct, "fixture")?.map(PathBuf::from),
            trials: opt::<f64>(&ct, "trials")?.map(|v| v as u32),
            weight: ct.get("weight").map_err(|e| e.to_string())?,
            tools: tools_subset,
            agent: read_agent(lua, opt(&ct, "agent")?)?,
            clock: opt(&ct, "clock")?,
            workdir: opt::<Table>(&ct, "workdir")?.map(|w| crate::workdir::WorkdirSpec::from_lua(&w)).transpose()?,
            checks,
            location: opt::<String>(&ct, "_where")?.unwrap_or_default(),
        });
    }

    let suite = Suite {
        path: path.to_path_buf(),
        dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        name: t.get("name").map_err(|e| e.to_string())?,
        version: opt(t, "version")?,
        description: opt(t, "description")?,
        trials: opt::<f64>(t, "trials")?.map(|v| v as u32).unwrap_or(1),
        budget,
        schema: opt::<String>(&sandbox, "schema")?.map(PathBuf::from),
        clock: opt(&sandbox, "clock")?,
        workdir: opt::<Table>(&sandbox, "workdir")?.map(|w| crate::workdir::WorkdirSpec::from_lua(&w)).transpose()?,
        gates,
        agent: read_agent(lua, opt(t, "agent")?)?,
        tools,
        cases,
        sources,
        skip: opt::<Value>(t, "skip")?.and_then(|v| match v {
            Value::String(s) => Some(s.to_string_lossy()),
            _ => None,
        }),
    };
    for case in &suite.cases {
        if suite.case_agent(case).is_none() {
            return Err(format!(
                "case '{}' ({}) has no agent: set `agent` in evalua.suite{{}} or in the case",
                case.id, case.location
            ));
        }
    }
    Ok(suite)
}
