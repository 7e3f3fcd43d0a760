//! A Lua data module (a file that returns a table: the goldens `promote`
//! writes, the drafted cases `synth` writes) read back as JSON, in a
//! sandboxed state of its own with its folder on the module path.

use std::path::Path;

use serde_json::Value as Json;

use super::api;
use super::engine::{self, StateConfig, convert};
use crate::error::{Error, Result};
use crate::spec::Sources;
use crate::util::paths::display_path;

/// The value the module at `path` returns, as JSON; `what` names it in the
/// error when that value cannot be JSON (`a goldens module`).
pub fn module_json(path: &Path, what: &str) -> Result<Json> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let cfg = StateConfig {
        module_dirs: crate::util::paths::module_dirs(&dir).into(),
        suite_dir: dir,
        sources: std::sync::Arc::new(Sources::default()),
        clock: 0,
        validate: true,
        judge_cache: false,
    };
    let lua = api::new_state(cfg).map_err(|e| Error::Environment(format!("cannot create a Lua state: {e}")))?;
    let v = engine::run_file(&lua, path).map_err(|e| Error::Input(engine::describe(&e)))?;
    convert::to_json(&lua, &v).map_err(|e| Error::Input(format!("{}: not {what}: {e}", display_path(path))))
}
