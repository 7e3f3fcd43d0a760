//! Integration tests: they drive the real binary on real suites.

mod architecture;
mod bad_input;
mod browser;
mod budgets;
mod checks;
mod coding;
mod command;
mod common;
mod compare;
mod figures;
mod isolation;
mod golden;
mod judge;
mod lua_defs;
mod mcp;
mod models;
mod partition;
mod reports;
mod runs;
mod synth;
