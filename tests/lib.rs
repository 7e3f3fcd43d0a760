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
mod faults;
mod figures;
mod golden;
mod grader_tests;
mod judge;
mod lua_defs;
mod mcp;
mod models;
mod partition;
mod regrade;
mod reports;
mod runs;
mod safety;
mod sdk;
mod survive;
mod synth;
mod view;
