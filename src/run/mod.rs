//! A run: plan the (case, trial) pairs ([`plan`]), screen coding cases on
//! their initial trees ([`screen`]), write the manifest ([`manifest`]), run
//! the trials on worker threads ([`scheduler`]) and announce each finished
//! trial to the run's sinks ([`events`]).

pub mod events;
pub mod manifest;
pub mod partition;
pub mod plan;
pub mod regrade;
pub mod resume;
pub mod scheduler;
pub mod screen;

pub use events::{RunEvent, Sink};
pub use partition::{Partition, PartitionArg};
pub use plan::{plan, select_agent};
pub use scheduler::{
    Executed, Kept, RunOptions, TrialFn, default_jobs, execute, execute_resumed, execute_work, run_trial, work,
};
