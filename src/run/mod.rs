//! A run: plan the (case, trial) pairs ([`plan`]), screen coding cases on
//! their initial trees ([`screen`]), write the manifest ([`manifest`]), run
//! the trials on worker threads ([`scheduler`], the one engine of runs,
//! re-grades ([`regrade`]) and graded traces ([`graded`])) and announce each
//! finished trial to the run's sinks ([`events`]).

pub mod adaptive;
pub mod events;
pub mod graded;
pub mod interleave;
pub mod manifest;
pub mod partition;
pub mod perturb;
pub mod plan;
pub mod planned;
pub mod regrade;
pub mod resume;
pub mod scheduler;
pub mod screen;

pub use events::{CancelReason, RunEvent, Sink};
pub use partition::{Partition, PartitionArg};
pub use plan::{check_agent, plan, select_agent, select_agents};
pub use planned::{Kept, Planned, TrialFn, run_trial, work};
pub use scheduler::{AsMade, Executed, Place, Placed, RunOptions, Scheduler, Source, default_jobs};
