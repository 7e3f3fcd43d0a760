//! The sandboxed Lua 5.4 state every suite, tool handler, scripted agent and
//! check runs in: creation, `require`, chunk loading, limits, value
//! conversion and suite reuse. What the state *offers* (the host table, `ctx`,
//! `t`, `env`) is registered by `lua::api`; this layer knows nothing of trials.
//!
//! A worker keeps one state across trials, each trial in a fresh environment,
//! so trials never share Lua globals. The state has no `io`, `os.execute`,
//! `debug`, `dofile`/`loadfile` or bytecode loading; `require` only finds the
//! embedded stdlib and `.lua` files of the project. Every call into Lua runs
//! under [`limits::Limits`].

pub mod convert;
pub mod limits;
pub mod memo;
pub mod patterns;
pub mod reuse;
pub mod state;

pub use limits::{Limits, Segment, Stop};
pub use state::*;
