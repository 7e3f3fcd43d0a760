//! An interleaved run (`evalua run SUITE --agent A --agent B`) read back and
//! decided: each agent's part is a run dir of its own (`agents/<name>/`, with
//! its figures and gates); the run adds the paired comparison of every agent
//! with the first (`compare`: per-case differences and their case-resampling
//! intervals), each agent's provider latency and errors per period of the
//! run, and the gates that name agents or differences. Rendered in
//! `report::interleaved`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compare::{self, Comparison};
use super::figures::{CaseFigures, Coverage, INCOMPLETE_NOTE, SuiteFigures, gate_figure};
use super::periods::{self, Period};
use super::robustness::{self as robust, Robustness};
use super::rundata::{self, RunData};
use crate::error::{Error, Result};
use crate::record::TrialRecord;
use crate::record::files::{self, RunDirFile};
use crate::record::interleaved::InterleavedManifest;
use crate::record::{BlockRecord, blocks};
use crate::spec::gate::{self, Gate, Metric, Scope, Verdict};

/// One agent's part, in the run's summary.json.
#[derive(Debug, Clone, Serialize)]
pub struct AgentPart<'a> {
    pub name: &'a str,
    /// Its run dir, relative to the interleaved run's.
    pub dir: String,
    pub run_id: &'a str,
    pub complete: bool,
    pub coverage: Coverage,
    pub cases: &'a [CaseFigures],
    pub figures: &'a SuiteFigures,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<&'a super::efficiency::Efficiency>,
    /// How many blocks it ran first in.
    pub first_in: usize,
}

/// The run's summary.json.
#[derive(Debug, Clone, Serialize)]
pub struct InterleavedSummary<'a> {
    pub kind: &'static str,
    pub suite: &'a str,
    pub run_id: &'a str,
    pub seed: u64,
    /// Every agent's part is complete.
    pub complete: bool,
    pub blocks: usize,
    pub agents: Vec<AgentPart<'a>>,
    /// Every agent after the first against the first: candidate − base, paired case by case.
    pub comparisons: &'a [Comparison],
    /// A run of perturbations: each perturbation paired with the baseline (SPEC §17).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub robustness: &'a [Robustness],
    pub periods: &'a [Period],
    pub gates: &'a [Verdict],
    pub warnings: &'a [String],
    /// An adaptive run's rounds and sequential verdicts (SPEC §20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<&'a super::adaptive::Adaptive>,
}

impl RunDirFile for InterleavedSummary<'_> {}

/// An interleaved run read back.
pub struct Interleaved {
    pub dir: PathBuf,
    pub manifest: InterleavedManifest,
    /// Its parts, the first the base: its agents, or `baseline` and each perturbation.
    pub parts: Vec<String>,
    pub runs: Vec<RunData>,
    pub blocks: Vec<BlockRecord>,
    pub comparisons: Vec<Comparison>,
    /// A run of perturbations: each perturbation paired with the baseline.
    pub robustness: Vec<Robustness>,
    pub periods: Vec<Period>,
    pub gates: Vec<Verdict>,
    pub warnings: Vec<String>,
    /// An adaptive run's rounds, replayed from the parts' records (SPEC §20).
    pub adaptive: Option<super::adaptive::Adaptive>,
}

impl Interleaved {
    /// Read an interleaved run's dir and every agent's part.
    pub fn load(dir: &Path, allow_incomplete: bool) -> Result<Interleaved> {
        let mpath = dir.join(files::INTERLEAVED);
        let manifest = InterleavedManifest::read(dir)?;
        let mut runs = Vec::new();
        for a in &manifest.parts() {
            runs.push(rundata::load_with(&manifest.part_dir(dir, a), allow_incomplete)?);
        }
        let blocks = blocks::read(dir)?;
        let mut comparisons = Vec::new();
        for cand in runs.iter().skip(1) {
            comparisons.push(compare::compare(&runs[0], cand, false)?);
        }
        let periods = periods::periods(&blocks, &manifest.parts(), periods::MAX_PERIODS);
        let mut specs = Vec::new();
        for g in &manifest.gates {
            specs.push(
                gate::from_manifest(&g.name, g.threshold, g.on)
                    .map_err(|e| Error::Input(format!("{}: gate {e}", mpath.display())))?,
            );
        }
        let (manifest_perturbations, seed) = (manifest.perturbations.clone(), manifest.seed);
        let runs_dirs: Vec<PathBuf> = runs.iter().map(|r| r.dir.clone()).collect();
        let mut run = Interleaved {
            dir: dir.to_path_buf(),
            parts: manifest.parts(),
            manifest,
            runs,
            blocks,
            comparisons,
            robustness: robustness(&manifest_perturbations, &runs_dirs, seed)?,
            periods,
            gates: Vec::new(),
            warnings: Vec::new(),
            adaptive: None,
        };
        run.gates = run.decide(&specs, allow_incomplete)?;
        run.adaptive = run.replay(&specs);
        if let Some(a) = &run.adaptive {
            let decide = run.complete() || allow_incomplete;
            super::adaptive::apply(a, &mut run.gates, decide, INCOMPLETE_NOTE);
        }
        for (name, r) in run.parts.iter().zip(&run.runs) {
            for w in &r.warnings {
                run.warnings.push(format!("{name}: {w}"));
            }
        }
        Ok(run)
    }

    pub fn complete(&self) -> bool {
        self.runs.iter().all(|r| r.complete())
    }

    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed) && self.runs.iter().all(|r| r.complete() || r.allow_incomplete)
    }

    /// An adaptive run's rounds replayed from its parts' records: a block is
    /// a case and trial number of the first part's cases, run by every part.
    fn replay(&self, specs: &[Gate]) -> Option<super::adaptive::Adaptive> {
        use super::adaptive::{Design, paired_gates, replay};
        let d = self.manifest.adaptive.as_ref()?;
        let base = self.runs.first()?;
        let weights: Vec<f64> = base.infos.iter().map(|c| c.weight).collect();
        let design =
            Design::new(&weights, d.min.clone(), base.planned.clone(), self.manifest.seed, self.runs.len() as u32);
        let gates = paired_gates(specs, &self.parts, !self.manifest.perturbations.is_empty());
        let outcomes: Vec<_> = self.runs.iter().map(|r| r.outcomes()).collect();
        let y = |cond: usize, c: usize, t: u32| -> Option<Option<f64>> {
            let run = self.runs.get(cond)?;
            let i = run.case_index(&base.infos.get(c)?.id)?;
            outcomes[cond].get(&(i, t)).copied()
        };
        Some(replay(design, gates, d.undecided == "pass", &y).0)
    }

    fn run_of(&self, name: &str) -> Option<&RunData> {
        self.parts.iter().position(|a| a == name).map(|i| &self.runs[i])
    }

    /// Every gate: each plain gate for each agent (named `GATE@AGENT`; in a
    /// run of perturbations, once, on the baseline), each gate naming an
    /// agent, each difference, each robustness gate.
    fn decide(&self, specs: &[Gate], allow_incomplete: bool) -> Result<Vec<Verdict>> {
        let names: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        let incomplete = !self.complete() && !allow_incomplete;
        for g in specs {
            match &g.scope {
                // A plain gate in a run of perturbations is a verdict on the baseline's trials.
                Scope::Run if !self.robustness.is_empty() || !self.manifest.perturbations.is_empty() => {
                    let (point, iv) = gate_figure(&self.runs[0].summary, g.metric);
                    out.push(gate::decide(g, point, iv));
                }
                Scope::Drop(p) | Scope::Perturbation(p) => out.push(self.robustness_verdict(g, p)),
                Scope::Run => {
                    for (name, r) in names.iter().zip(&self.runs) {
                        let (point, iv) = gate_figure(&r.summary, g.metric);
                        let mut v = gate::decide(g, point, iv);
                        v.name = format!("{}@{name}", g.name);
                        out.push(v);
                    }
                }
                Scope::Agent(a) => match self.run_of(a) {
                    Some(r) => {
                        let (point, iv) = gate_figure(&r.summary, g.metric);
                        out.push(gate::decide(g, point, iv));
                    }
                    None => out.push(undecided(g, format!("agent '{a}' did not run in this run"))),
                },
                Scope::Delta { pair } => match Scope::delta_pair(pair, &names) {
                    Some((cand, base)) => {
                        let (b, c) = (self.run_of(base), self.run_of(cand));
                        let (Some(b), Some(c)) = (b, c) else { continue };
                        let found = self
                            .comparisons
                            .iter()
                            .find(|x| x.base.run_id == b.run_id() && x.cand.run_id == c.run_id());
                        let owned;
                        let cmp = match found {
                            Some(x) => x,
                            None => {
                                owned = compare::compare(b, c, false)?;
                                &owned
                            }
                        };
                        let (point, iv) = delta_figure(cmp, b, c, g.metric);
                        out.push(gate::decide(g, point, iv));
                    }
                    None => out.push(undecided(
                        g,
                        format!("'{pair}' does not name two agents of this run ({})", names.join(", ")),
                    )),
                },
            }
        }
        if incomplete {
            for v in out.iter_mut().filter(|v| v.passed) {
                v.passed = false;
                v.note = Some(INCOMPLETE_NOTE.to_string());
            }
        }
        Ok(out)
    }

    /// A robustness gate's verdict (SPEC §17): the drop in pass^1 (at most
    /// the threshold) or the recovery (at least) of perturbation `p`.
    fn robustness_verdict(&self, g: &Gate, p: &str) -> Verdict {
        let Some(r) = self.robustness.iter().find(|r| r.name == p) else {
            return undecided(g, format!("perturbation '{p}' did not run in this run (evalua run SUITE --perturb)"));
        };
        let (point, iv) = match g.scope {
            Scope::Drop(_) => (r.drop.value, r.drop.low.zip(r.drop.high)),
            _ => (r.recovery.value, r.recovery.low.zip(r.recovery.high)),
        };
        gate::decide(g, point, iv)
    }

    /// The run's summary.json content.
    pub fn summary(&self) -> InterleavedSummary<'_> {
        let agents = self
            .parts
            .iter()
            .zip(&self.runs)
            .map(|(name, r)| AgentPart {
                name,
                dir: self.manifest.part_dir(Path::new(""), name).display().to_string(),
                run_id: r.run_id(),
                complete: r.complete(),
                coverage: r.coverage,
                cases: &r.summary.cases,
                figures: &r.summary.figures,
                efficiency: r.summary.efficiency.as_ref(),
                first_in: self.blocks.iter().filter(|b| b.order.first() == Some(name)).count(),
            })
            .collect();
        InterleavedSummary {
            kind: "interleaved",
            suite: &self.manifest.suite,
            run_id: &self.manifest.run_id,
            seed: self.manifest.seed,
            complete: self.complete(),
            blocks: self.blocks.len(),
            agents,
            comparisons: &self.comparisons,
            robustness: &self.robustness,
            periods: &self.periods,
            gates: &self.gates,
            warnings: &self.warnings,
            adaptive: self.adaptive.as_ref(),
        }
    }
}

/// Each perturbation paired with the baseline, from the parts' records
/// (`dirs`: the baseline's first, then each perturbation's in order).
fn robustness(perturbations: &[String], dirs: &[PathBuf], seed: u64) -> Result<Vec<Robustness>> {
    if perturbations.is_empty() || dirs.len() != perturbations.len() + 1 {
        return Ok(Vec::new());
    }
    let read = |d: &Path| -> Result<Vec<TrialRecord>> {
        crate::record::RunDir::open(d)?.records()?.map(|r| r.map(|(_, _, rec)| rec)).collect()
    };
    let base = robust::Baseline::new(&read(&dirs[0])?);
    let mut out = Vec::new();
    for (name, d) in perturbations.iter().zip(&dirs[1..]) {
        out.push(robust::robustness(name, &base, &read(d)?, seed));
    }
    Ok(out)
}

/// A gate this run cannot decide: failed, saying why.
fn undecided(g: &Gate, why: String) -> Verdict {
    Verdict {
        name: g.name.clone(),
        threshold: g.threshold,
        value: None,
        on: g.on,
        passed: false,
        note: Some(why),
        undefined: false,
    }
}

/// A difference gate's figure: the paired difference (candidate − base) with
/// its interval, for the figures `compare` pairs; the plain difference of the
/// two runs' figures (no interval) for the counts and latencies.
pub fn delta_figure(c: &Comparison, base: &RunData, cand: &RunData, m: Metric) -> (Option<f64>, Option<(f64, f64)>) {
    let name = m.to_string();
    if let Some(f) = c.figures.iter().find(|f| f.name == name) {
        return (f.delta, f.interval);
    }
    if matches!(m, Metric::PassHat(_) | Metric::PassAt(_) | Metric::Accepted | Metric::CostPerAccepted) {
        // k beyond what both runs support, or no cost: undefined.
        return (None, None);
    }
    let (b, _) = gate_figure(&base.summary, m);
    let (c, _) = gate_figure(&cand.summary, m);
    (c.zip(b).map(|(c, b)| c - b), None)
}
