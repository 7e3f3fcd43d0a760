//! What a Lua state offers suites, one module per namespace (the way
//! wezterm keeps one module per Lua API surface):
//!
//! - [`host`]: `evalua.host`, the primitives the stdlib is written on;
//! - [`declare`]: where `suite:case` and `suite:dataset` declarations go;
//! - [`scan`]: the host's globbing and secret-scanning primitives;
//! - [`judge`]: the host's judge calls, and [`marks`]: what a check returns when it neither passes nor fails;
//! - [`db`]: the database handles (`ctx.db`, `t.db`, `t.initial`);
//! - [`ctx`]: what a tool handler gets;
//! - [`t`]: what a check gets;
//! - [`env`]: what a scripted agent gets.

pub mod ctx;
pub mod db;
pub mod declare;
pub mod env;
pub mod fields;
pub mod host;
pub mod judge;
pub mod marks;
pub mod phase;
pub mod scan;
pub mod t;

use mlua::Lua;

use super::engine::{self, StateConfig};

/// A sandboxed state with the host API registered (see [`engine::new_state`]).
pub fn new_state(config: StateConfig) -> mlua::Result<Lua> {
    engine::new_state(config, host::register)
}
