//! summary.json as written: the figures with the run's identity, its
//! coverage, the caveats a reader must keep in mind, and the gates' verdicts.

use serde::Serialize;

use super::published::TaskCoverage;
use super::summary::{CheckRate, Summary};
use crate::spec::gate::{Gate, Verdict};

/// summary.json: the figures plus the run's identity, how complete it is,
/// what to keep in mind reading it, and the gates' verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryFile<'a> {
    pub suite: &'a str,
    pub version: Option<&'a str>,
    pub run_id: &'a str,
    pub seed: u64,
    /// Every planned trial has its record and none was interrupted.
    pub complete: bool,
    pub coverage: CoverageFile<'a>,
    pub caveats: &'a Caveats,
    /// The caveats as sentences (also printed as warnings).
    pub warnings: &'a [String],
    #[serde(flatten)]
    pub summary: &'a Summary,
    pub gates: &'a [Verdict],
    /// The dataset files the cases came from, with the bad rows they skipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetCount>,
    /// An adaptive run's rounds and sequential verdicts (SPEC §20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<&'a super::adaptive::Adaptive>,
}

impl crate::record::files::RunDirFile for SummaryFile<'_> {}

/// A dataset file's rows in summary.json: read, declared as cases, skipped as bad.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetCount {
    pub path: String,
    pub rows: u64,
    pub cases: u64,
    pub skipped: u64,
}

impl DatasetCount {
    pub fn of(entries: &[crate::record::manifest::DatasetEntry]) -> Vec<DatasetCount> {
        entries
            .iter()
            .map(|d| DatasetCount { path: d.path.clone(), rows: d.rows, cases: d.cases, skipped: d.skipped })
            .collect()
    }
}

/// How much of the planned run its records cover.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// (case, trial) pairs planned (for this partition).
    pub planned: usize,
    /// Distinct (case, trial) pairs with a record.
    pub recorded: usize,
    /// Records of trials that ended as `interrupted`.
    pub interrupted: usize,
}

/// summary.json's `coverage`: the run's completeness, and what share of the
/// tasks the agent attempted (SPEC §22).
#[derive(Debug, Clone, Serialize)]
pub struct CoverageFile<'a> {
    #[serde(flatten)]
    pub run: Coverage,
    #[serde(flatten)]
    pub tasks: &'a TaskCoverage,
}

impl Coverage {
    pub fn complete(&self) -> bool {
        self.interrupted == 0 && self.recorded >= self.planned
    }
}

/// Below this many counted cases a run warns that its intervals are optimistic.
pub const FEW_CASES: usize = 10;

/// What a reader of the figures must keep in mind (summary.json `caveats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Caveats {
    /// Some planned trials have no record, or were interrupted.
    pub incomplete: bool,
    /// Fewer than [`FEW_CASES`] cases were counted.
    pub few_cases: bool,
    /// The suite declares no gate: nothing decides pass or fail.
    pub no_gates: bool,
    /// The suite has judge checks and every one of them was skipped.
    pub judges_all_skipped: bool,
}

/// The caveats of a run, and each as a sentence.
///
/// `resume` is the command that finishes the run (`evalua run SUITE --resume RUN_DIR`).
pub fn caveats(
    summary: &Summary,
    gates: &[Gate],
    judge_checks: &[String],
    cov: &Coverage,
    resume: &str,
) -> (Caveats, Vec<String>) {
    let mut c = Caveats::default();
    let mut warnings = Vec::new();
    if !cov.complete() {
        c.incomplete = true;
        warnings.push(format!(
            "the run is incomplete: {} of {} planned trials recorded{}; the figures cover only what ran and no gate \
             passes (resume it with `{resume}`, or decide on what ran with --allow-incomplete)",
            cov.recorded.saturating_sub(cov.interrupted),
            cov.planned,
            if cov.interrupted > 0 { format!(", {} interrupted", cov.interrupted) } else { String::new() }
        ));
    }
    let cases = summary.figures.capability.cases;
    if cases < FEW_CASES {
        c.few_cases = true;
        warnings.push(format!(
            "only {} counted: intervals over fewer than {FEW_CASES} cases say little about cases the suite does not hold",
            plural(cases, "case")
        ));
    }
    if gates.is_empty() {
        c.no_gates = true;
        warnings.push(
            "the suite declares no gates: nothing decides pass or fail, and the exit code is 0 whatever the figures"
                .into(),
        );
    }
    let judged: Vec<&CheckRate> = summary.checks.iter().filter(|r| judge_checks.contains(&r.tally.name)).collect();
    if !judged.is_empty() && judged.iter().all(|r| r.tally.passed + r.tally.failed + r.tally.errors == 0) {
        c.judges_all_skipped = true;
        warnings.push(format!(
            "every judge check was skipped ({}): no judge model was reachable, so nothing they grade was verified \
             (--require-judge makes this a failure)",
            judged.iter().map(|r| r.tally.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    (c, warnings)
}

/// `1 case`, `3 cases`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}
