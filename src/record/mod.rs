//! What a trial leaves behind, as typed data: one line of `trials.jsonl`
//! (stable keys, SPEC §8), a full trace in the run dir's trace store (`traces`), the run's manifest,
//! and the journal a running trial writes them from. The run dir is written
//! and read in one place: [`rundir`].

pub mod blocks;
pub mod calibration;
pub mod call;
pub mod files;
pub mod harden;
pub mod interleaved;
pub mod journal;
pub mod labels;
pub mod ledger;
pub mod manifest;
pub mod outcome;
pub mod rundir;
pub mod state;
pub mod trace;
pub mod traces;
pub mod trial;
pub mod trials;

pub use blocks::{BlockRecord, BlockTrial};
pub use call::*;
pub use journal::{BudgetHit, Journal};
pub use manifest::{Invalid, Manifest};
pub use outcome::*;
pub use rundir::{KeptState, RunDir};
pub use state::StateRecord;
pub use trace::*;
pub use trial::*;
