//! evalua: evaluate LLM agents with repeated, isolated trials, graded on the
//! final state and the trajectory. Suites are Lua; the host owns isolation,
//! budgets, the tool executor, recording, statistics and result files.
//!
//! Data flows one way: suite file → plan (cases × trials) → trial (sandbox +
//! agent + executor + checks) → record (trace, trials.jsonl) → figures → reports.

pub mod agent;
pub mod calibrate;
pub mod coding;
pub mod compare;
pub mod error;
pub mod executor;
pub mod gate;
pub mod judge;
pub mod lua;
pub mod model;
pub mod partition;
pub mod process;
pub mod record;
pub mod report;
pub mod run;
pub mod rundir;
pub mod sandbox;
pub mod stats;
pub mod suite;
pub mod trial;
pub mod workdir;
