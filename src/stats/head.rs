//! summary.json read back in brief: the run's identity, its headline figures
//! with their intervals, the counts kept apart, and the gates' verdicts.
//! Listing many runs reads this instead of recomputing every run's figures
//! from its records; the per-case rows are skipped.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::figures::Interval;
use crate::error::{Error, Result};
use crate::spec::gate::Verdict;

#[derive(Debug, Clone, Deserialize)]
pub struct SummaryHead {
    pub suite: String,
    #[serde(default)]
    pub version: Option<String>,
    pub run_id: String,
    /// `false` when the run stopped before its end (SPEC §11); absent (or
    /// `true`) when it ran to the end.
    #[serde(default)]
    pub complete: Option<bool>,
    pub figures: HeadFigures,
    #[serde(default)]
    pub gates: Vec<Verdict>,
}

/// The suite figures of summary.json (capability view, plus the counts).
#[derive(Debug, Clone, Deserialize)]
pub struct HeadFigures {
    pub cases: usize,
    pub trials: u32,
    #[serde(default)]
    pub pass_at_k: BTreeMap<u32, f64>,
    #[serde(default)]
    pub pass_hat_k: BTreeMap<u32, f64>,
    pub accepted_rate: Option<f64>,
    /// By figure name (`"pass^3"`, `"accepted"`, …).
    #[serde(default)]
    pub intervals: BTreeMap<String, Interval>,
    pub critical_failures: u32,
    pub grader_errors: u32,
    pub infra_errors: u32,
    #[serde(default)]
    pub skipped_checks: u32,
    #[serde(default)]
    pub total_cost_usd: f64,
    #[serde(default)]
    pub cost_per_accepted_usd: Option<f64>,
    pub operational: HeadView,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HeadView {
    pub trials: u32,
}

/// Read a summary.json in brief; an unreadable one is the user's input (exit 2).
pub fn read(path: &Path) -> Result<SummaryHead> {
    let text = std::fs::read(path).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), e.line())))
}
