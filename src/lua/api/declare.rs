//! Where a suite's declarations go: `host.declare(case)` (from `suite:case`)
//! and `host.dataset(path, format, on_error, fn)` (from `suite:dataset`).
//!
//! A state does not keep what a suite declares in the suite table: loading
//! turns each case into its typed spec at once (and lets the Lua table go),
//! and a trial's evaluation keeps each declaration aside, out of the trial's
//! reach, for the worker to materialise the one case a trial runs. Which of
//! the two happens is the [`Declarations`] the state's owner installs.

use std::rc::Rc;

use mlua::{Function, Lua, Table, Value};

/// What `suite:dataset` passed to the host.
pub struct DatasetDecl {
    /// Absolute path of the file.
    pub path: String,
    /// `format`, when given.
    pub format: Option<String>,
    /// `on_error`: `"fail"` or `"skip"`.
    pub on_error: String,
    /// Loading: the stdlib's row function `function(row, i, where) -> case`;
    /// a trial's evaluation: the suite's `map` (None when it gave none).
    pub function: Option<Function>,
}

/// What a state does with a suite's declarations.
pub trait Declarations {
    /// A case: loading passes the normalised case table (checks built), a
    /// trial's evaluation the table as the suite wrote it. Ok(Some(msg)):
    /// the declaration is wrong (raised at the suite's line).
    fn case(&self, lua: &Lua, case: Table) -> mlua::Result<Option<String>>;
    /// A dataset file. Ok(Some(msg)) as for [`Declarations::case`]; a bad
    /// row is an error raised from here, naming the data file's line.
    fn dataset(&self, lua: &Lua, dataset: DatasetDecl) -> mlua::Result<Option<String>>;
    /// A declaration's error (`file:line: message`), reported so that
    /// loading goes on and every independent error is said at once. False:
    /// not collected here, raise it.
    fn error(&self, _msg: String) -> bool {
        false
    }
}

/// The state's [`Declarations`], as app data.
#[derive(Clone)]
pub struct Declare(pub Rc<dyn Declarations>);

fn installed(lua: &Lua) -> mlua::Result<Rc<dyn Declarations>> {
    match lua.app_data_ref::<Declare>() {
        Some(d) => Ok(d.0.clone()),
        None => Err(mlua::Error::runtime(
            "cases are declared while the suite file loads, not while a trial runs (suite:case / suite:dataset)",
        )),
    }
}

pub fn register(lua: &Lua, h: &Table) -> mlua::Result<()> {
    h.raw_set(
        "declare",
        lua.create_function(|lua, case: Value| {
            let Value::Table(case) = case else {
                return Ok(Some(format!("expects a table, got {}", case.type_name())));
            };
            // Cloned out first: the hook calls back into Lua.
            let d = installed(lua)?;
            d.case(lua, case)
        })?,
    )?;
    h.raw_set(
        "dataset",
        lua.create_function(
            |lua, (path, format, on_error, function): (String, Option<String>, Option<String>, Option<Function>)| {
                let d = installed(lua)?;
                d.dataset(
                    lua,
                    DatasetDecl { path, format, on_error: on_error.unwrap_or_else(|| "fail".into()), function },
                )
            },
        )?,
    )?;
    // `report(where, msg)`: a declaration failed; say where (the message's own
    // `file:line`, else `where`) and go on loading when the state's owner
    // collects errors (`evalua check` says every one at once), else raise.
    h.raw_set(
        "report",
        lua.create_function(|lua, (at, msg): (String, Value)| {
            let msg = match msg {
                Value::String(s) => s.to_string_lossy(),
                Value::Error(e) => crate::lua::engine::describe(&e),
                other => format!("{other:?}"),
            };
            let msg = msg.lines().next().unwrap_or("").to_string();
            let msg = if crate::util::names::has_location(&msg) { msg } else { format!("{at}: {msg}") };
            let collected = lua.app_data_ref::<Declare>().map(|d| d.0.clone()).is_some_and(|d| d.error(msg.clone()));
            if collected { Ok(()) } else { Err(mlua::Error::runtime(msg)) }
        })?,
    )?;
    // `nearest(name, names)`: the name of `names` nearest to `name` (a typo of it), or nil.
    h.raw_set(
        "nearest",
        lua.create_function(|_, (name, names): (String, Vec<String>)| {
            Ok(crate::util::names::nearest(&name, names.iter().map(String::as_str)).map(String::from))
        })?,
    )?;
    Ok(())
}
