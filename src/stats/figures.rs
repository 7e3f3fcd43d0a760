//! Figures from trial records (SPEC §7).
//!
//! Per case with n trials and c accepted: pass@k = 1 − C(n−c,k)/C(n,k) and
//! pass^k = C(c,k)/C(n,k). Suite figures are weighted means over cases, with
//! 95% intervals from a two-stage bootstrap: cases are resampled (never pooled
//! trials), then each drawn case's rate is redrawn from what its own trials
//! say (see [`Bootstrap`]), so trial-to-trial noise shows even with one case.
//!
//! The work is spread along its seams, and this file re-exports it so
//! `stats::figures::X` (and `stats::X`) keep naming the same things:
//! `tally.rs` (records stream in), `case_figures.rs` (a case's row),
//! `bootstrap.rs` (the intervals), `summary.rs` (summary.json's figures),
//! `summary_file.rs` (the file: coverage, caveats) and `gates.rs`.

pub use super::bootstrap::{Bootstrap, Interval, beta};
pub use super::case_figures::CaseFigures;
pub use super::estimators::{ByK, CaseInfo, K, pass_at_k, pass_hat_k, quantile, wilson};
pub use super::gates::{GateContext, INCOMPLETE_NOTE, decide_gates, decide_gates_for, gate_figure};
pub use super::summary::{
    Breakdown, CascadeFigures, CheckRate, Figures, INTERVAL_K_UP_TO, MonitorRate, SuiteFigures, Summary, ToolFigures,
    summarize,
};
pub use super::summary_file::{Caveats, Coverage, CoverageFile, DatasetCount, FEW_CASES, SummaryFile, caveats, plural};
pub use super::tally::{CascadeTally, CaseTally, CheckTally, MonitorTally, StageFigures, Tally, ToolTally};
