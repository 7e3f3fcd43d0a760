//! Loading a grader test file (`*_test.lua`, run by `evalua test`): the file
//! runs in a sandboxed state like a suite (with `evalua` as a global) and
//! returns `evalua.grader_tests(check, { examples… })`, or a list of them.
//! Each example, a synthetic trial, is read here into typed data; the checks
//! stay Lua functions in the file's state, where `trial::grader_tests` runs them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Lua, Table, Value};
use serde::{Deserialize, Deserializer};
use serde_json::Value as Json;

use super::api;
use super::engine::{self as lua, Segment, convert, limits::Guarded};
use super::load::state_config;
use crate::record::{Ended, Message, OutboxItem};
use crate::spec::Sources;
use crate::util::paths::display_path;

const LOAD_INSTRUCTIONS: u64 = 200_000_000;
const LOAD_SECONDS: u64 = 20;

/// The verdict an example expects of its grader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Pass,
    Fail,
    Skip,
    Error,
}

impl Expect {
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Pass => "pass",
            Expect::Fail => "fail",
            Expect::Skip => "skip",
            Expect::Error => "error",
        }
    }
}

/// `{}` is an empty list too (Lua cannot tell an empty list from an empty table).
fn seq<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    match Json::deserialize(d)? {
        Json::Object(m) if m.is_empty() => Ok(Vec::new()),
        Json::Null => Ok(Vec::new()),
        v => Vec::<T>::deserialize(v).map_err(serde::de::Error::custom),
    }
}

fn opt_seq<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    seq(d).map(Some)
}

/// A tool call of a synthetic trial: only `name` is required.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleCall {
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub args: Option<Json>,
    /// Default `executed`.
    pub status: Option<crate::record::CallStatus>,
    pub effect: Option<String>,
    pub result: Option<Json>,
    pub error: Option<String>,
    pub started_ms: Option<f64>,
    pub ended_ms: Option<f64>,
}

/// The example's database: `schema` and `fixture` (SQL files) make the
/// initial state, `sql` runs on a copy of it to make the final one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleDb {
    pub schema: Option<PathBuf>,
    pub fixture: Option<PathBuf>,
    pub sql: Option<String>,
}

/// A file the agent left: its content, or `false` (deleted).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FileChange {
    Write(String),
    Delete(bool),
}

/// Usage figures, each optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub turns: Option<u32>,
    pub tool_calls: Option<u32>,
    pub wall_ms: Option<f64>,
}

/// One example: a synthetic finished trial and the verdict its grader must give.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    pub name: String,
    pub expect: Expect,
    #[serde(default, deserialize_with = "seq")]
    pub calls: Vec<ExampleCall>,
    #[serde(default)]
    pub answer: String,
    #[serde(default, deserialize_with = "opt_seq")]
    pub messages: Option<Vec<Message>>,
    #[serde(default, deserialize_with = "seq")]
    pub outbox: Vec<OutboxItem>,
    pub db: Option<ExampleDb>,
    #[serde(default)]
    pub files: BTreeMap<String, FileChange>,
    #[serde(default)]
    pub initial_files: BTreeMap<String, String>,
    pub workdir: Option<PathBuf>,
    pub ended: Option<Ended>,
    pub error: Option<String>,
    pub usage: Option<ExampleUsage>,
    pub trial: Option<u32>,
    /// `file:line` of the example's `name` in the test file, when found
    /// there (else the group's line is all there is).
    #[serde(skip)]
    pub location: Option<String>,
}

/// One `evalua.grader_tests(...)`: its checks (Lua) and examples (typed).
pub struct Group {
    /// The grader's name (its first check's).
    pub name: String,
    /// `file:line` of the `evalua.grader_tests` call.
    pub location: String,
    /// Each check's table (with `run`), name and criticality.
    pub checks: Vec<(Table, String, bool)>,
    /// Each example with its `case` table, when it gives one.
    pub examples: Vec<(Example, Option<Table>)>,
}

/// A loaded test file: its Lua state (where the checks live) and its groups.
pub struct TestFile {
    pub path: PathBuf,
    pub lua: Lua,
    pub groups: Vec<Group>,
}

/// Where each example's `name` is written, below its group's line: a table
/// constructor has no line of its own in Lua, its name's quoted text does.
/// Looked for in order (each after the previous one), so two examples of one
/// name get their own lines; None when the text is not found as written.
fn example_lines(source: &str, location: &str, names: &[&str]) -> Vec<Option<String>> {
    let Some((file, line)) = location.rsplit_once(':') else { return vec![None; names.len()] };
    let Ok(start) = line.parse::<usize>() else { return vec![None; names.len()] };
    let lines: Vec<&str> = source.lines().collect();
    let mut at = start.saturating_sub(1);
    names
        .iter()
        .map(|name| {
            let quoted = [format!("\"{name}\""), format!("'{name}'"), format!("[[{name}]]")];
            let found = (at..lines.len()).find(|&i| quoted.iter().any(|q| lines[i].contains(q.as_str())))?;
            at = found;
            Some(format!("{file}:{}", found + 1))
        })
        .collect()
}

fn group(lua: &Lua, t: &Table, source: &str) -> Result<Group, String> {
    let get = |k: &str| -> Result<Value, String> { t.get::<Value>(k).map_err(|e| lua::describe(&e)) };
    let location = match get("where")? {
        Value::String(s) => s.to_string_lossy(),
        _ => "?".into(),
    };
    let name = match get("name")? {
        Value::String(s) => s.to_string_lossy(),
        _ => "?".into(),
    };
    let mut checks = Vec::new();
    if let Value::Table(list) = get("checks")? {
        for c in list.sequence_values::<Table>() {
            let c = c.map_err(|e| lua::describe(&e))?;
            let n: String = c.get("name").map_err(|e| lua::describe(&e))?;
            let critical: bool = c.get::<Option<bool>>("critical").map_err(|e| lua::describe(&e))?.unwrap_or(false);
            checks.push((c, n, critical));
        }
    }
    let mut examples = Vec::new();
    if let Value::Table(list) = get("examples")? {
        for (i, ex) in list.sequence_values::<Table>().enumerate() {
            let ex = ex.map_err(|e| lua::describe(&e))?;
            let mut map = serde_json::Map::new();
            let mut case = None;
            for pair in ex.pairs::<String, Value>() {
                let (k, v) = pair.map_err(|e| format!("{location}: example {}: {}", i + 1, lua::describe(&e)))?;
                if k == "case" {
                    case = v.as_table().cloned();
                    continue;
                }
                let j = convert::to_json(lua, &v).map_err(|e| format!("{location}: example {}: '{k}': {e}", i + 1))?;
                map.insert(k, j);
            }
            let label = map.get("name").and_then(|n| n.as_str()).unwrap_or("?").to_string();
            let example: Example = serde_json::from_value(Json::Object(map))
                .map_err(|e| format!("{location}: example {} ('{label}'): {e}", i + 1))?;
            examples.push((example, case));
        }
    }
    let names: Vec<&str> = examples.iter().map(|(e, _)| e.name.as_str()).collect();
    let lines = example_lines(source, &location, &names);
    for ((e, _), at) in examples.iter_mut().zip(lines) {
        e.location = at;
    }
    Ok(Group { name, location, checks, examples })
}

/// Load a test file. An error is one line, `file:line: …` where Lua knows the line.
pub fn load(path: &Path) -> Result<TestFile, String> {
    let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shown = display_path(&path);
    let sources = Arc::new(Sources::default());
    let lua =
        api::new_state(state_config(&path, sources, 0, true)).map_err(|e| format!("cannot create a Lua state: {e}"))?;
    // `evalua` is a global in test files.
    let require: mlua::Function = lua.globals().get("require").map_err(|e| e.to_string())?;
    let evalua: Value = require.call("evalua").map_err(|e| lua::describe(&e))?;
    lua::env(&lua).and_then(|env| env.raw_set("evalua", evalua)).map_err(|e| e.to_string())?;
    let limits = lua::limits(&lua);
    let seg = Segment {
        instructions: Some(LOAD_INSTRUCTIONS),
        deadline: Some(Instant::now() + Duration::from_secs(LOAD_SECONDS)),
    };
    let value = match limits.guard(&lua, seg, || lua::run_file(&lua, &path)) {
        Guarded::Done(Ok(v)) => v,
        Guarded::Done(Err(e)) => return Err(lua::describe(&e)),
        Guarded::Stopped(stop) => return Err(format!("{shown}: loading the test file stopped: {}", stop.describe())),
    };
    let is_group = |t: &Table| t.raw_get::<bool>("__grader_tests").unwrap_or(false);
    // The file as written, for each example's line (a group's examples sit below its call).
    let source = std::fs::read_to_string(&path).unwrap_or_default();
    let mut groups = Vec::new();
    match &value {
        Value::Table(t) if is_group(t) => groups.push(group(&lua, t, &source)?),
        Value::Table(t) if t.raw_len() > 0 => {
            for (i, g) in t.sequence_values::<Value>().enumerate() {
                match g.map_err(|e| lua::describe(&e))? {
                    Value::Table(g) if is_group(&g) => groups.push(group(&lua, &g, &source)?),
                    other => {
                        return Err(format!(
                            "{shown}: item {} of the returned list is a {}, not evalua.grader_tests(...)",
                            i + 1,
                            other.type_name()
                        ));
                    }
                }
            }
        }
        other => {
            return Err(format!(
                "{shown}: a test file must return evalua.grader_tests(check, {{ examples… }}) or a list of them, got {}",
                other.type_name()
            ));
        }
    }
    Ok(TestFile { path, lua, groups })
}
