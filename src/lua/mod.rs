//! Lua: the engine (a sandboxed, limited state and suite reuse), the loader
//! (suite tables → typed specs) and the API a state offers (`evalua.host`,
//! `ctx`, `t`, `env`, database handles, judges). Layered in that order:
//! `engine` ← `api` ← `load` (and `grader_tests`, the loader of `*_test.lua` files;
//! `data`, a module that returns a table read back as JSON).

pub mod agents;
pub mod api;
pub mod data;
pub mod engine;
pub mod grader_tests;
pub mod load;
pub mod suite_checks;
