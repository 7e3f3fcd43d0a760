//! The commands, one module each: what `main` dispatches to after parsing.
//! Each returns the exit code of a command that ran (0, or 1 when a gate
//! failed), or the error that stopped it (exit 2 or 3).

pub mod calibrate;
pub mod check;
pub mod compare;
pub mod export;
pub mod flags;
pub mod grade;
pub mod harden;
pub mod init;
pub mod interleaved;
pub mod json;
pub mod labels;
pub mod list;
pub mod mcp;
pub mod merge;
pub mod mock_judge;
pub mod plan;
pub mod promote;
pub mod regrade;
pub mod report;
pub mod review;
pub mod run;
pub mod show;
pub mod synth;
pub mod test;
pub mod view;
