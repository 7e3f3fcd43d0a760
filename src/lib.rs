//! evalua: evaluate LLM agents with repeated, isolated trials, graded on the
//! final state and the trajectory. Suites are Lua; the host owns isolation,
//! budgets, the tool executor, recording, statistics and result files.
//!
//! Data flows one way: suite file → plan (cases × trials) → trial (sandbox +
//! agent + executor + checks) → record (trace, trials.jsonl) → figures →
//! reports. The modules are layered the same way, and no module imports one
//! above it (ARCHITECTURE.md draws the layers):
//!
//! ```text
//! util, error        helpers with no knowledge of suites
//! process            the one process runner
//! spec               what a suite declares, typed (no Lua)
//! record             what a trial leaves behind, typed; the run dir
//! stats              figures from records; a run dir read back
//! sandbox, model     per-trial state; model clients and the model proxy
//! otel               OpenTelemetry traces out (export) and in (read, conventions)
//! judge              LLM judges and their calibration
//! lua                engine ← api ← load (suite tables → spec)
//! executor           the one door for tool calls
//! trial              one trial: prepare, grade, record
//! agent, grade       scripted, command (JSON Lines, MCP), model, replay; recorded traces graded
//! run                plan, scheduler, typed run events
//! harden             `evalua harden`: adversary agents played against every case
//! synth              drafted cases (SPEC §23): the request, validation, the module, reviews
//! report             console, report files, compare, sinks
//! view               `evalua view`: the local web page over run dirs
//! cmd                one module per command
//! ```

pub mod agent;
pub mod cmd;
pub mod error;
pub mod executor;
pub mod grade;
pub mod harden;
pub mod judge;
pub mod lua;
pub mod model;
pub mod otel;
pub mod process;
pub mod record;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod spec;
pub mod stats;
pub mod synth;
pub mod trial;
pub mod util;
pub mod view;
