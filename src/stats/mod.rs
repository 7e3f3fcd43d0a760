//! Figures from trial records (SPEC §7): the estimators, the tally records
//! stream into, the bootstrap over cases, gate decisions, and a run dir read
//! back with its figures (or, in brief, from its summary.json: `head`).

pub mod adaptive;
pub mod agree;
pub mod blame;
pub mod bootstrap;
pub mod case_figures;
pub mod compare;
pub mod efficiency;
pub mod estimators;
pub mod figures;
pub mod gates;
pub mod head;
pub mod interleaved;
pub mod pending;
pub mod periods;
pub mod power;
pub mod published;
pub mod robustness;
pub mod rundata;
pub mod safety;
pub mod sequence;
pub mod summary;
pub mod summary_file;
pub mod tally;
pub mod verdicts;

pub use figures::*;
pub use rundata::RunData;
