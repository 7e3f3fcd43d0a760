//! The inputs of a suite's own cases, for the duplicate check (SPEC §23): the
//! suite evaluated once with declarations that keep each case's id and input
//! and let the rest go. Dataset rows are not read (they are not compared).

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use mlua::{Lua, Table};

use crate::error::{Error, Result};
use crate::lua::api::{self, declare};
use crate::lua::load;
use crate::spec::Sources;

#[derive(Default)]
struct Inputs(RefCell<Vec<(String, String)>>);

impl declare::Declarations for Inputs {
    fn case(&self, _lua: &Lua, case: Table) -> mlua::Result<Option<String>> {
        let id: Option<String> = case.raw_get("id").ok();
        let input: Option<String> = case.raw_get("input").ok();
        if let (Some(id), Some(input)) = (id, input) {
            self.0.borrow_mut().push((id, input));
        }
        Ok(None)
    }
    fn dataset(&self, _lua: &Lua, _d: declare::DatasetDecl) -> mlua::Result<Option<String>> {
        Ok(None)
    }
    fn error(&self, _msg: String) -> bool {
        true
    }
}

/// (id, input) of every case the suite file declares.
pub fn of(path: &Path) -> Result<Vec<(String, String)>> {
    let lua = api::new_state(load::state_config(path, Arc::new(Sources::default()), 0, true))
        .map_err(|e| Error::Environment(format!("cannot create a Lua state: {e}")))?;
    let found = Rc::new(Inputs::default());
    lua.set_app_data(declare::Declare(found.clone()));
    load::eval_suite(&lua, path).map_err(Error::Input)?;
    lua.remove_app_data::<declare::Declare>();
    let v = found.0.borrow().clone();
    Ok(v)
}
