//! One trial, start to finish: a fresh environment in the worker's Lua
//! state, a fresh sandbox, the agent acting through the executor (driven by
//! whatever the caller passes: the agent layer), then the checks on the final
//! state and trajectory.
//!
//! Nothing here is shared with another trial: the Lua environment, the
//! database copy, the work dir, the RNG and the outbox are all the trial's own.

pub mod adherence;
pub mod checks;
pub mod context;
pub mod grader_tests;
pub mod grading;
pub mod lifecycle;
pub mod perturb;
pub mod plan;
pub mod published;
pub mod reexec;
pub mod regrade;
pub mod user;
pub mod worker;

pub use context::{AgentEnd, Trial, agent_turn, agent_view, view_of};
pub(crate) use grading::case_checks;
pub use grading::run_checks;
pub use lifecycle::{TestRow, TrialOutput, internal_error, run, test_rows_of};
pub use plan::{CasePlan, Condition, Plan, Position, Switches};
