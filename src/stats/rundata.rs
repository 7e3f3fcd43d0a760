//! A run dir read back with its figures: reports, `compare` and `merge` work
//! from the run dir alone, recomputing the figures from trials.jsonl with the
//! same estimators and seeded bootstrap as the run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::figures::{CaseInfo, Summary, SummaryFile, Tally, decide_gates, summarize};
use crate::error::{Error, Result};
use crate::record::{Manifest, Outcome, RunDir, Trace, TrialRecord};
use crate::spec::gate::{self, Gate, Verdict};

/// One trial in brief (for grids, timings and merge's bookkeeping).
#[derive(Debug, Clone, Copy)]
pub struct TrialBrief {
    pub trial: u32,
    pub outcome: Outcome,
    pub wall_ms: f64,
}

/// Everything a run dir says, with its figures recomputed from trials.jsonl.
pub struct RunData {
    pub dir: PathBuf,
    pub run_dir: RunDir,
    pub manifest: Manifest,
    pub infos: Vec<CaseInfo>,
    /// Trials planned per case (manifest order).
    pub planned: Vec<u32>,
    /// Case revision per case (manifest order), when recorded.
    pub revisions: Vec<Option<String>>,
    /// Every trial in the file, per case (manifest order), in file order: trial
    /// number, outcome and wall time only.
    pub trials: Vec<Vec<TrialBrief>>,
    /// The full records of the trials that were not accepted (file order): the
    /// reports show only these, so memory grows with failures, not with trials.
    pub records: Vec<TrialRecord>,
    pub gate_specs: Vec<Gate>,
    pub summary: Summary,
    pub gates: Vec<Verdict>,
    index: HashMap<String, usize>,
}

impl RunData {
    pub fn suite(&self) -> &str {
        &self.manifest.suite.name
    }
    pub fn version(&self) -> Option<&str> {
        self.manifest.suite.version.as_deref()
    }
    pub fn run_id(&self) -> &str {
        &self.manifest.run_id
    }
    pub fn seed(&self) -> u64 {
        self.manifest.seed
    }
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }
    pub fn case_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }
    /// The manifest's suite sha256, if recorded.
    pub fn suite_sha256(&self) -> Option<&str> {
        Some(self.manifest.suite.sha256.as_str()).filter(|s| !s.is_empty())
    }
    /// The trace of a record, if its file is there.
    pub fn trace(&self, rec: &TrialRecord) -> Option<Trace> {
        self.run_dir.read_trace(rec)
    }
    /// summary.json's content for these figures.
    pub fn summary_file(&self) -> SummaryFile<'_> {
        SummaryFile {
            suite: self.suite(),
            version: self.version(),
            run_id: self.run_id(),
            seed: self.seed(),
            summary: &self.summary,
            gates: &self.gates,
        }
    }
}

/// Whether a run dir's run finished: it wrote summary.json, and did not say
/// `"complete": false` (a run stopped by a signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    Complete,
    /// No summary.json: the run failed, was killed, or is still running.
    NoSummary,
    /// summary.json says `"complete": false`.
    Interrupted,
}

/// The part of summary.json that says whether the run finished.
#[derive(Debug, serde::Deserialize)]
struct SummaryHead {
    #[serde(default)]
    complete: Option<bool>,
}

/// Read whether the run in `dir` finished (see [`Completion`]).
pub fn completion(dir: &Path) -> Result<Completion> {
    let path = dir.join("summary.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Completion::NoSummary),
        Err(e) => return Err(Error::Input(format!("{}: {e}", path.display()))),
    };
    let head: SummaryHead =
        serde_json::from_str(&text).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), e.line())))?;
    Ok(if head.complete == Some(false) { Completion::Interrupted } else { Completion::Complete })
}

/// Load a run dir and recompute its figures and gate verdicts.
pub fn load(dir: &Path) -> Result<RunData> {
    let run_dir = RunDir::open(dir)?;
    let manifest = run_dir.read_manifest()?;
    let mpath = run_dir.file("manifest.json");
    let infos: Vec<CaseInfo> = manifest
        .cases
        .iter()
        .map(|c| CaseInfo {
            id: c.id.clone(),
            weight: c.weight,
            tags: c.tags.clone(),
            difficulty: c.difficulty.clone(),
        })
        .collect();
    let planned = manifest.cases.iter().map(|c| c.trials).collect();
    let revisions = manifest.cases.iter().map(|c| c.revision.clone()).collect();
    let mut gate_specs = Vec::new();
    for g in &manifest.gates {
        gate_specs.push(
            gate::from_manifest(&g.name, g.threshold, g.on)
                .map_err(|e| Error::Input(format!("{}: gate {e}", mpath.display())))?,
        );
    }
    let index: HashMap<String, usize> = infos.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    let mut trials = vec![Vec::new(); infos.len()];
    let mut records = Vec::new();
    // Stream trials.jsonl: every record feeds the tally; only non-accepted ones are kept.
    let mut tally = Tally::new(infos.len());
    let path = run_dir.file("trials.jsonl");
    for item in run_dir.records()? {
        let (line, _, rec) = item?;
        let Some(&i) = index.get(&rec.case) else {
            return Err(Error::Input(format!(
                "{}:{line}: a record of case '{}', which the manifest does not list",
                path.display(),
                rec.case
            )));
        };
        tally.add(i, &rec);
        trials[i].push(TrialBrief { trial: rec.trial, outcome: rec.outcome, wall_ms: rec.wall_ms });
        if rec.outcome != Outcome::Accepted {
            records.push(rec);
        }
    }
    let summary = summarize(&infos, &tally, manifest.seed);
    let gates = decide_gates(&gate_specs, &summary);
    Ok(RunData {
        dir: dir.to_path_buf(),
        run_dir,
        manifest,
        infos,
        planned,
        revisions,
        trials,
        records,
        gate_specs,
        summary,
        gates,
        index,
    })
}
