//! A run dir read back with its figures: reports, `compare` and `merge` work
//! from the run dir alone, recomputing the figures from trials.jsonl with the
//! same estimators and seeded bootstrap as the run.

use crate::record::files;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::figures::{
    CaseInfo, Caveats, Coverage, CoverageFile, DatasetCount, GateContext, Summary, SummaryFile, Tally, caveats,
    decide_gates_for, summarize,
};
use super::published::Declared;
use crate::error::{Error, Result};
use crate::record::rundir::{RecordAt, RecordFile, TraceLink};
use crate::record::{Ended, Manifest, Outcome, RunDir, Trace, TrialRecord};
use crate::spec::gate::{self, Gate, Verdict};

/// One trial in brief (for grids, timings and merge's bookkeeping).
#[derive(Debug, Clone, Copy)]
pub struct TrialBrief {
    pub trial: u32,
    pub outcome: Outcome,
    pub wall_ms: f64,
}

/// Where the record of a trial that was not accepted lies in trials.jsonl.
/// The reports read these records back a case at a time ([`Failed`]), so a
/// run's memory does not grow with its failures.
#[derive(Debug, Clone, Copy)]
pub struct FailedAt {
    /// The case's index (manifest order).
    pub case: u32,
    pub trial: u32,
    /// Listed with the errors counted apart: a grader or infra error, or a
    /// graded trial an infrastructure failure cut short.
    pub counted_apart: bool,
    /// How the agent's run ended (the reports count non-accepted trials by it).
    pub ended: Ended,
    offset: u64,
    len: u32,
}

/// The records of the trials that were not accepted, read back from
/// trials.jsonl on demand (see [`RunData::failed`]).
pub struct Failed<'a> {
    run: &'a RunData,
    file: RecordFile,
    /// Indices into `run.failed` per case, in trial order.
    by_case: Vec<Vec<u32>>,
}

impl Failed<'_> {
    pub fn read(&self, at: &FailedAt) -> Result<TrialRecord> {
        self.file.read(at.offset, at.len as usize)
    }
    /// Where case `i`'s non-accepted trials lie, in trial order.
    pub fn places(&self, i: usize) -> impl Iterator<Item = &FailedAt> {
        self.by_case.get(i).into_iter().flatten().map(|&j| &self.run.failed[j as usize])
    }
    /// Case `i`'s non-accepted trials, in trial order.
    pub fn of_case(&self, i: usize) -> Result<Vec<TrialRecord>> {
        self.places(i).map(|at| self.read(at)).collect()
    }
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
    /// Where the trials that were not accepted lie (file order): the reports
    /// show only these, and read them back with [`RunData::failed`]. Filled
    /// by [`load`]; run data fed with [`RunData::add`] (the viewer) has none,
    /// so write reports only from a loaded run.
    pub failed: Vec<FailedAt>,
    pub gate_specs: Vec<Gate>,
    pub summary: Summary,
    /// The gates' verdicts: on an incomplete run none passes unless `--allow-incomplete`.
    pub gates: Vec<Verdict>,
    /// How much of the plan the records cover.
    pub coverage: Coverage,
    pub caveats: Caveats,
    pub warnings: Vec<String>,
    /// Whether summary.json was there when the dir was read (a run killed
    /// before its end has none).
    pub summary_present: bool,
    /// Whether gates were decided on an incomplete run (`--allow-incomplete`).
    pub allow_incomplete: bool,
    /// An adaptive run's rounds, replayed from the records, and its sequential verdicts (SPEC §20).
    pub adaptive: Option<super::adaptive::Adaptive>,
    index: HashMap<String, usize>,
    /// The (case, trial) pairs recorded so far, and how many were interrupted.
    recorded: HashSet<(usize, u32)>,
    interrupted: usize,
    /// The (case, trial) pairs whose last record was interrupted.
    cut: HashSet<(usize, u32)>,
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
    /// Every gate held, on a complete run (or `--allow-incomplete`).
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed) && (self.complete() || self.allow_incomplete)
    }
    /// Every planned trial has its record and none was interrupted.
    pub fn complete(&self) -> bool {
        self.coverage.complete()
    }
    pub fn case_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }
    /// The manifest's suite sha256, if recorded.
    pub fn suite_sha256(&self) -> Option<&str> {
        Some(self.manifest.suite.sha256.as_str()).filter(|s| !s.is_empty())
    }
    /// The trace of a record, if the run dir holds it.
    pub fn trace(&self, rec: &TrialRecord) -> Option<Trace> {
        self.run_dir.read_trace(rec)
    }
    /// Where a record's trace is (the trace pack and its line), for links.
    pub fn trace_link(&self, rec: &TrialRecord) -> TraceLink {
        self.run_dir.trace_link(rec)
    }
    /// The records of the trials that were not accepted, to read back.
    pub fn failed(&self) -> Result<Failed<'_>> {
        let mut by_case: Vec<Vec<u32>> = vec![Vec::new(); self.infos.len()];
        for (j, f) in self.failed.iter().enumerate() {
            if let Some(v) = by_case.get_mut(f.case as usize) {
                v.push(j as u32);
            }
        }
        for v in &mut by_case {
            v.sort_by_key(|&j| self.failed[j as usize].trial);
        }
        Ok(Failed { run: self, file: self.run_dir.record_file()?, by_case })
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
            complete: self.complete(),
            coverage: CoverageFile { run: self.coverage, tasks: &self.summary.published.coverage },
            caveats: &self.caveats,
            warnings: &self.warnings,
            datasets: DatasetCount::of(&self.manifest.datasets),
            adaptive: self.adaptive.as_ref(),
        }
    }
}

impl RunData {
    /// A run dir with its manifest read and no record counted yet: feed it
    /// records with [`RunData::add`], then [`RunData::refigure`]. (The viewer
    /// follows a run that is still writing this way.)
    pub fn open(dir: &Path, allow_incomplete: bool) -> Result<RunData> {
        let run_dir = RunDir::open(dir)?;
        let manifest = run_dir.read_manifest()?;
        let mpath = run_dir.file(files::MANIFEST);
        let infos: Vec<CaseInfo> = manifest
            .cases
            .iter()
            .map(|c| CaseInfo {
                id: c.id.clone(),
                weight: c.weight,
                tags: c.tags.clone(),
                difficulty: c.difficulty.clone(),
                reference: c.reference.clone(),
                should_abstain: c.should_abstain,
                pending_review: c.pending_review,
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
        let summary_present = run_dir.file(files::SUMMARY).is_file();
        let summary = summarize(&infos, &Tally::new(&infos), manifest.seed);
        let mut run = RunData {
            dir: dir.to_path_buf(),
            trials: vec![Vec::new(); infos.len()],
            run_dir,
            manifest,
            infos,
            planned,
            revisions,
            failed: Vec::new(),
            gate_specs,
            summary,
            gates: Vec::new(),
            coverage: Coverage::default(),
            caveats: Caveats::default(),
            warnings: Vec::new(),
            summary_present,
            allow_incomplete,
            adaptive: None,
            index,
            recorded: HashSet::new(),
            interrupted: 0,
            cut: HashSet::new(),
        };
        run.refigure(&run.tally());
        Ok(run)
    }

    /// Count one record (line `line` of trials.jsonl) into `tally` and the
    /// trial briefs; returns its case's index. The record itself is not kept.
    pub fn add(&mut self, tally: &mut Tally, line: usize, rec: &TrialRecord) -> Result<usize> {
        let Some(&i) = self.index.get(&rec.case) else {
            return Err(Error::Input(format!(
                "{}:{line}: a record of case '{}', which the manifest does not list",
                self.run_dir.file(files::TRIALS).display(),
                rec.case
            )));
        };
        tally.add(i, rec);
        self.recorded.insert((i, rec.trial));
        if rec.ended == Ended::Interrupted {
            self.interrupted += 1;
            self.cut.insert((i, rec.trial));
        } else {
            self.cut.remove(&(i, rec.trial));
        }
        self.trials[i].push(TrialBrief { trial: rec.trial, outcome: rec.outcome, wall_ms: rec.wall_ms });
        Ok(i)
    }

    /// An empty tally for this run: its cases, and the exclusions its suite declared (SPEC §22).
    pub fn tally(&self) -> Tally {
        Tally::excluding(&self.infos, self.manifest.publish.as_ref().map(|p| p.exclude.as_slice()).unwrap_or(&[]))
    }

    /// What the suite declared that the published figures need (SPEC §22).
    fn declared(&self) -> Declared {
        let p = self.manifest.publish.clone().unwrap_or_default();
        Declared {
            exclude: p.exclude,
            interventions: !p.interventions.is_empty(),
            contamination: !p.contamination.is_empty(),
        }
    }

    /// Recompute the figures, the coverage, the caveats and the gate verdicts from `tally`.
    pub fn refigure(&mut self, tally: &Tally) {
        let m = &self.manifest;
        self.summary = summarize(&self.infos, tally, m.seed);
        self.summary.judge_kappa = judge_kappa(&m.judges);
        self.summary.published = tally.published.figures(&self.declared());
        let planned_total = m.cases.iter().map(|c| c.trials as usize).sum::<usize>();
        self.adaptive = self.replay();
        self.coverage = Coverage {
            // Older manifests do not say; a partition's share is then what it recorded.
            planned: m.planned_trials.unwrap_or(if m.partition.is_some() {
                self.recorded.len()
            } else {
                planned_total
            }),
            recorded: self.recorded.len(),
            interrupted: self.interrupted,
        };
        if let Some(a) = &self.adaptive {
            // The trials the rounds asked for (to where the records end, when cut short).
            self.coverage.planned = a.trials as usize;
        }
        let resume = {
            use crate::util::paths::{display_path, shell_word};
            let suite = if m.suite.path.is_empty() { "SUITE".to_string() } else { shell_word(&m.suite.path) };
            format!("evalua run {suite} --resume {}", shell_word(&display_path(&self.dir)))
        };
        (self.caveats, self.warnings) =
            caveats(&self.summary, &self.gate_specs, &m.judge_checks, &self.coverage, &resume);
        let ctx = GateContext {
            agent: m.agent.as_ref().and_then(|a| a.name.as_deref()),
            interleaved: m.interleaved.is_some(),
        };
        self.gates =
            decide_gates_for(&self.gate_specs, &self.summary, self.coverage.complete(), self.allow_incomplete, ctx);
        if let Some(a) = &self.adaptive {
            let decide = self.coverage.complete() || self.allow_incomplete;
            super::adaptive::apply(a, &mut self.gates, decide, super::figures::INCOMPLETE_NOTE);
        }
        // Graded traces are one trial each (unless `match` gives a case several):
        // a figure over k trials a case has no value there. Such a gate is said
        // to be undefined, and not decided, instead of failing every grade.
        if m.kind == crate::record::manifest::RunKind::Graded {
            let most = m.cases.iter().map(|c| c.trials).max().unwrap_or(0);
            for v in self.gates.iter_mut().filter(|v| v.value.is_none()) {
                v.passed = true;
                v.undefined = true;
                v.note = Some(format!(
                    "undefined for these items: no case has enough graded items (at most {most} a case) for this figure; \
                     not decided (gates for grading: grade = {{ gate = … }} in evalua.suite)"
                ));
            }
        }
    }
}

impl RunData {
    /// An adaptive run's rounds replayed from its records (see `stats::adaptive`).
    fn replay(&self) -> Option<super::adaptive::Adaptive> {
        let m = &self.manifest;
        let d = m.adaptive.as_ref()?;
        let design = super::adaptive::Design::new(
            // A case awaiting review weighs nothing in the sequences (SPEC §23).
            &self.infos.iter().map(|c| if c.pending_review { 0.0 } else { c.weight }).collect::<Vec<_>>(),
            d.min.clone(),
            self.planned.clone(),
            m.seed,
            1,
        );
        let agent = m.agent.as_ref().and_then(|a| a.name.as_deref());
        let gates = super::adaptive::seq_gates(&self.gate_specs, agent);
        let last = self.outcomes();
        let y = |_cond: usize, c: usize, t: u32| -> Option<Option<f64>> { last.get(&(c, t)).copied() };
        Some(super::adaptive::replay(design, gates, d.undecided == "pass", &y).0)
    }

    /// Each recorded (case, trial)'s outcome as an adaptive run's sequence
    /// sees it (`stats::adaptive::outcome_value`): its last record's, unless
    /// that one was interrupted (then it has none yet).
    pub fn outcomes(&self) -> HashMap<(usize, u32), Option<f64>> {
        let mut last: HashMap<(usize, u32), Option<f64>> = HashMap::new();
        for (c, ts) in self.trials.iter().enumerate() {
            for t in ts {
                last.insert((c, t.trial), super::adaptive::outcome_value(t.outcome));
            }
        }
        last.retain(|k, _| !self.cut.contains(k));
        last
    }
}

/// The lowest calibration kappa of the manifest's reachable rubric (and
/// cascade) judges; None when one has no kappa, or none is reachable.
pub fn judge_kappa(judges: &[crate::record::manifest::JudgeEntry]) -> Option<f64> {
    let mut min: Option<f64> = None;
    for j in judges {
        if !(j.kind == "rubric" || j.kind == "cascade") || !j.reachable {
            continue;
        }
        let k = j.calibration_kappa?;
        min = Some(min.map_or(k, |m: f64| m.min(k)));
    }
    min
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
struct CompleteFlag {
    #[serde(default)]
    complete: Option<bool>,
}

/// Read whether the run in `dir` finished (see [`Completion`]).
pub fn completion(dir: &Path) -> Result<Completion> {
    let path = dir.join(files::SUMMARY);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Completion::NoSummary),
        Err(e) => return Err(Error::Input(format!("{}: {e}", path.display()))),
    };
    let head: CompleteFlag =
        serde_json::from_str(&text).map_err(|e| Error::Input(format!("{}:{}: {e}", path.display(), e.line())))?;
    Ok(if head.complete == Some(false) { Completion::Interrupted } else { Completion::Complete })
}

/// Load a run dir and recompute its figures and gate verdicts.
pub fn load(dir: &Path) -> Result<RunData> {
    load_with(dir, false)
}

/// As [`load`]; with `allow_incomplete`, gates are decided on the trials an
/// incomplete run recorded instead of failing.
pub fn load_with(dir: &Path, allow_incomplete: bool) -> Result<RunData> {
    let mut run = RunData::open(dir, allow_incomplete)?;
    // Stream trials.jsonl: every record feeds the tally; only non-accepted ones are kept.
    let mut tally = run.tally();
    tally.declare_monitors(&run.manifest.monitors);
    // A run killed before its first trial ended may have no trials.jsonl at all.
    let path = run.run_dir.file(files::TRIALS);
    let lines: Box<dyn Iterator<Item = Result<RecordAt>>> =
        if path.exists() { Box::new(run.run_dir.records_at()?) } else { Box::new(std::iter::empty()) };
    for item in lines {
        let RecordAt { offset, len, line, record: rec, .. } = item?;
        let case = run.add(&mut tally, line, &rec)?;
        if rec.outcome != Outcome::Accepted {
            run.failed.push(FailedAt {
                case: case as u32,
                trial: rec.trial,
                counted_apart: matches!(rec.outcome, Outcome::GraderError | Outcome::InfraError)
                    || rec.infra_error.is_some(),
                ended: rec.ended,
                offset,
                len: u32::try_from(len)
                    .map_err(|_| Error::Input(format!("{}:{line}: a record of {len} bytes", path.display())))?,
            });
        }
    }
    run.refigure(&tally);
    Ok(run)
}
