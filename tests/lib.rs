//! Integration tests: they drive the real binary on real suites.

mod bad_input;
mod budgets;
mod checks;
mod command;
mod common;
mod figures;
mod judge;
mod lua_defs;
mod models;
mod runs;
