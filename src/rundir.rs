//! Read a run dir back: manifest.json, trials.jsonl and traces/. Reports,
//! `compare` and `merge` work from the run dir alone, recomputing the figures
//! from the records with the same estimators and seeded bootstrap as the run.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::error::{Result, UserError};
use crate::gate::{self, Gate, Verdict};
use crate::record::{Trace, TrialRecord};
use crate::stats::{self, CaseInfo, Summary, Tally};

/// One trial in brief (for grids, timings and merge's bookkeeping).
#[derive(Debug, Clone, Copy)]
pub struct TrialBrief {
    pub trial: u32,
    pub outcome: crate::record::Outcome,
    pub wall_ms: f64,
}

/// Everything a run dir says, with its figures recomputed from trials.jsonl.
pub struct RunData {
    pub dir: PathBuf,
    pub manifest: Json,
    pub suite: String,
    pub version: Option<String>,
    pub run_id: String,
    pub seed: u64,
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
    index: std::collections::HashMap<String, usize>,
}

impl RunData {
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }
    pub fn case_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }
    /// The manifest's suite sha256, if recorded.
    pub fn suite_sha256(&self) -> Option<&str> {
        self.manifest["suite"]["sha256"].as_str()
    }
    /// The trace of a record, if its file is there.
    pub fn trace(&self, rec: &TrialRecord) -> Option<Trace> {
        if !rec.trace.starts_with("traces/") || rec.trace.contains("..") {
            return None;
        }
        let text = fs::read_to_string(self.dir.join(&rec.trace)).ok()?;
        serde_json::from_str(&text).ok()
    }
    /// summary.json's content for these figures.
    pub fn summary_json(&self) -> Json {
        crate::run::summary_json(
            &self.suite,
            self.version.as_deref(),
            &self.run_id,
            self.seed,
            &self.summary,
            &self.gates,
        )
    }
}

fn read_json(path: &Path) -> Result<Json> {
    let text = fs::read_to_string(path).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| UserError(format!("{}:{}: {e}", path.display(), e.line())))
}

/// Load a run dir and recompute its figures and gate verdicts.
pub fn load(dir: &Path) -> Result<RunData> {
    if !dir.is_dir() {
        return Err(UserError(format!("{}: not a run dir (no such directory)", dir.display())));
    }
    let mpath = dir.join("manifest.json");
    if !mpath.is_file() {
        return Err(UserError(format!("{}: not a run dir (no manifest.json)", dir.display())));
    }
    let manifest = read_json(&mpath)?;
    let Some(cases) = manifest["cases"].as_array() else {
        return Err(UserError(format!("{}: manifest has no 'cases' list", mpath.display())));
    };
    let mut infos = Vec::new();
    let mut planned = Vec::new();
    let mut revisions = Vec::new();
    for c in cases {
        let Some(id) = c["id"].as_str() else {
            return Err(UserError(format!("{}: a case without an id", mpath.display())));
        };
        infos.push(CaseInfo {
            id: id.to_string(),
            weight: c["weight"].as_f64().unwrap_or(1.0),
            tags: c["tags"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t.as_str().map(String::from)).collect())
                .unwrap_or_default(),
            difficulty: c["difficulty"].as_str().map(String::from),
        });
        planned.push(c["trials"].as_u64().unwrap_or(0) as u32);
        revisions.push(c["revision"].as_str().map(String::from));
    }
    let mut gate_specs = Vec::new();
    for g in manifest["gates"].as_array().into_iter().flatten() {
        let name = g["name"].as_str().unwrap_or_default();
        let threshold = g["threshold"].as_f64().unwrap_or(f64::NAN);
        let on = g["on"].as_str().unwrap_or("point");
        gate_specs.push(
            gate::from_manifest(name, threshold, on)
                .map_err(|e| UserError(format!("{}: gate {e}", mpath.display())))?,
        );
    }
    let seed = manifest["seed"].as_u64().unwrap_or(1);
    let mut run = RunData {
        dir: dir.to_path_buf(),
        suite: manifest["suite"]["name"].as_str().unwrap_or("suite").to_string(),
        version: manifest["suite"]["version"].as_str().map(String::from),
        run_id: manifest["run_id"].as_str().unwrap_or_default().to_string(),
        seed,
        manifest,
        infos,
        planned,
        revisions,
        trials: Vec::new(),
        records: Vec::new(),
        gate_specs,
        summary: stats::summarize(&[], &Tally::new(0), seed),
        gates: Vec::new(),
        index: Default::default(),
    };
    run.index = run.infos.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    run.trials = vec![Vec::new(); run.infos.len()];
    // Stream trials.jsonl: every record feeds the tally; only non-accepted ones are kept.
    let path = dir.join("trials.jsonl");
    let file = fs::File::open(&path).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    let mut tally = Tally::new(run.infos.len());
    for (n, line) in std::io::BufRead::lines(std::io::BufReader::new(file)).enumerate() {
        let line = line.map_err(|e| UserError(format!("{}:{}: {e}", path.display(), n + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: TrialRecord = serde_json::from_str(&line)
            .map_err(|e| UserError(format!("{}:{}: not a trial record: {e}", path.display(), n + 1)))?;
        let Some(i) = run.case_index(&rec.case) else {
            return Err(UserError(format!(
                "{}:{}: a record of case '{}', which the manifest does not list",
                path.display(),
                n + 1,
                rec.case
            )));
        };
        tally.add(i, &rec);
        run.trials[i].push(TrialBrief { trial: rec.trial, outcome: rec.outcome, wall_ms: rec.wall_ms });
        if rec.outcome != crate::record::Outcome::Accepted {
            run.records.push(rec);
        }
    }
    run.summary = stats::summarize(&run.infos, &tally, run.seed);
    run.gates = run
        .gate_specs
        .iter()
        .map(|g| {
            let (point, interval) = crate::run::gate_figure(&run.summary, g.metric);
            gate::decide(g, point, interval)
        })
        .collect();
    Ok(run)
}
