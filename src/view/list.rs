//! The list of runs: per run dir, what it is (suite, version, time, kind),
//! whether it is finished, and its headline figures with their intervals
//! and gates. A finished run is read from its manifest and summary.json
//! (cached until either file changes); a run without summary.json (still
//! writing, or stopped) from its records, followed as they are appended.

use crate::record::files;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::catalog::{Root, RunRef, Skipped, discover};
use super::state::{Cache, Kind, Stamp};
use crate::record::{Manifest, RunDir};
use crate::report::gate_line;
use crate::spec::gate::{self, Metric, Verdict};
use crate::stats::Summary;
use crate::stats::head::{self, SummaryHead};

/// A run without summary.json whose trials.jsonl changed this recently is
/// taken as still running.
pub const RUNNING_WITHIN: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// summary.json written, the run went to its end.
    Complete,
    /// Stopped before its end: summary.json says `complete: false`, or there
    /// is none and trials.jsonl has not changed for a while.
    Incomplete,
    /// No summary.json yet and trials.jsonl changing.
    Running,
}

/// A figure with its 95% interval.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Fig {
    pub value: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Headline {
    pub cases: usize,
    /// Trials counted (capability view) and all trials (operational view).
    pub trials: u32,
    pub trials_all: u32,
    pub accepted: Fig,
    /// The k of the pass^k / pass@k shown: a gated k, else the largest up to 5.
    pub k: u32,
    pub pass_hat: Fig,
    pub pass_at: Fig,
    pub critical_failures: u32,
    pub grader_errors: u32,
    pub infra_errors: u32,
    pub skipped_checks: u32,
    pub total_cost_usd: f64,
    pub cost_per_accepted_usd: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Gates {
    pub total: usize,
    pub failed: usize,
    pub lines: Vec<String>,
}

impl Gates {
    fn of(v: &[Verdict]) -> Gates {
        Gates {
            total: v.len(),
            failed: v.iter().filter(|g| !g.passed).count(),
            lines: v.iter().map(gate_line).collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: String,
    pub path: String,
    pub suite: String,
    pub version: Option<String>,
    pub run_id: String,
    pub started_at: String,
    pub kind: Kind,
    pub regraded_from: Option<String>,
    /// The run whose agent made these trials' trajectories (its own id unless re-graded).
    pub trajectories_run_id: String,
    pub merged: bool,
    pub partition: Option<String>,
    pub status: Status,
    pub trials_planned: u64,
    pub figures: Headline,
    pub gates: Gates,
    /// Why the run could not be read, when it could not.
    pub error: Option<String>,
    /// One agent's part of an interleaved run: which agent, of which run.
    pub interleaved: Option<AgentPart>,
}

/// A row's place in an interleaved run: its agent, the run's agents (the
/// first is the base every other is paired with) and, for the others, the
/// base agent's row in this list (for the paired view, `/compare`).
#[derive(Debug, Clone, Serialize)]
pub struct AgentPart {
    pub run_id: String,
    pub agent: String,
    pub agents: Vec<String>,
    pub base_id: Option<String>,
    /// A run of perturbations: `agent` names a condition (`baseline` or a perturbation).
    pub perturbed: bool,
}

/// Each non-base agent's row of an interleaved run gets its base's row id.
fn pair_agents(runs: &mut [RunRow]) {
    let bases: HashMap<String, String> = runs
        .iter()
        .filter_map(|r| {
            let p = r.interleaved.as_ref()?;
            (p.agents.first() == Some(&p.agent)).then(|| (p.run_id.clone(), r.id.clone()))
        })
        .collect();
    for r in runs.iter_mut() {
        if let Some(p) = r.interleaved.as_mut()
            && p.agents.first() != Some(&p.agent)
        {
            p.base_id = bases.get(&p.run_id).cloned();
        }
    }
}

/// The k shown in the list: the k of a pass^k or pass@k gate, else min(largest k, 5).
fn headline_k(gates: &[Verdict], kmax: u32) -> u32 {
    gates
        .iter()
        .find_map(|g| match gate::metric(g.name.split(" (").next().unwrap_or(&g.name)) {
            Ok(Metric::PassHat(k) | Metric::PassAt(k)) if k <= kmax => Some(k),
            _ => None,
        })
        .unwrap_or(kmax.min(5))
}

fn from_head(h: &SummaryHead) -> Headline {
    let f = &h.figures;
    let kmax = f.pass_hat_k.keys().next_back().copied().unwrap_or(1);
    let k = headline_k(&h.gates, kmax);
    let fig = |v: Option<f64>, name: String| {
        let iv = f.intervals.get(&name);
        Fig { value: v, low: iv.map(|i| i.lower), high: iv.map(|i| i.upper) }
    };
    Headline {
        cases: f.cases,
        trials: f.trials,
        trials_all: f.operational.trials,
        accepted: fig(f.accepted_rate, Metric::Accepted.to_string()),
        k,
        pass_hat: fig(f.pass_hat_k.get(&k).copied(), Metric::PassHat(k).to_string()),
        pass_at: fig(f.pass_at_k.get(&k).copied(), Metric::PassAt(k).to_string()),
        critical_failures: f.critical_failures,
        grader_errors: f.grader_errors,
        infra_errors: f.infra_errors,
        skipped_checks: f.skipped_checks,
        total_cost_usd: f.total_cost_usd,
        cost_per_accepted_usd: f.cost_per_accepted_usd,
    }
}

/// The headline of figures computed here (a run without summary.json, or a loaded run).
pub fn from_summary(s: &Summary, gates: &[Verdict]) -> Headline {
    let f = &s.figures;
    let cap = &f.capability;
    let kmax = cap.k_max().unwrap_or(1);
    let k = headline_k(gates, kmax);
    let fig = |v: Option<f64>, m: Metric| {
        let iv = cap.interval(m);
        Fig { value: v, low: iv.map(|i| i.lower), high: iv.map(|i| i.upper) }
    };
    Headline {
        cases: cap.cases,
        trials: cap.trials,
        trials_all: f.operational.trials,
        accepted: fig(cap.accepted_rate, Metric::Accepted),
        k,
        pass_hat: fig(cap.pass_hat(k), Metric::PassHat(k)),
        pass_at: fig(cap.pass_at(k), Metric::PassAt(k)),
        critical_failures: f.critical_failures,
        grader_errors: f.grader_errors,
        infra_errors: f.infra_errors,
        skipped_checks: f.skipped_checks,
        total_cost_usd: f.total_cost_usd,
        cost_per_accepted_usd: f.cost_per_accepted_usd,
    }
}

/// The status of a run dir from its files alone.
pub fn status(dir: &std::path::Path, head: Option<&SummaryHead>) -> Status {
    if let Some(h) = head {
        return if h.complete == Some(false) { Status::Incomplete } else { Status::Complete };
    }
    let recent = Stamp::of(&dir.join(files::TRIALS))
        .modified()
        .or_else(|| Stamp::of(&dir.join(files::MANIFEST)).modified())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < RUNNING_WITHIN);
    if recent { Status::Running } else { Status::Incomplete }
}

/// The stamps of manifest.json, summary.json and trials.jsonl a row was read at.
type Stamps = (Stamp, Stamp, Stamp);

/// Rows already read, until one of their files changes (a run without
/// summary.json has its status, which ages, decided again every time).
#[derive(Default)]
pub struct Listing {
    done: Mutex<HashMap<PathBuf, (Stamps, RunRow)>>,
}

/// The answer of `/api/runs`.
#[derive(Debug, Serialize)]
pub struct RunList {
    /// Changes whenever any row does (the page redraws only then).
    pub stamp: String,
    pub roots: Vec<String>,
    pub runs: Vec<RunRow>,
    pub skipped: Vec<Skipped>,
}

impl Listing {
    pub fn list(&self, roots: &[Root], cache: &Cache) -> RunList {
        let (refs, skipped) = discover(roots);
        let mut runs: Vec<RunRow> = refs.iter().map(|r| self.row_of(roots, r, cache)).collect();
        pair_agents(&mut runs);
        runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| a.path.cmp(&b.path)));
        {
            let live: std::collections::HashSet<&PathBuf> = refs.iter().map(|r| &r.dir).collect();
            self.done.lock().unwrap_or_else(|e| e.into_inner()).retain(|k, _| live.contains(k));
        }
        let text = serde_json::to_string(&runs).unwrap_or_default();
        let stamp = format!("{:016x}", fnv1a(text.as_bytes()) ^ fnv1a(format!("{skipped:?}").as_bytes()));
        RunList { stamp, roots: roots.iter().map(|r| r.given.display().to_string()).collect(), runs, skipped }
    }

    /// The row of one run dir.
    pub fn row_of(&self, roots: &[Root], r: &RunRef, cache: &Cache) -> RunRow {
        let stamps = (
            Stamp::of(&r.dir.join(files::MANIFEST)),
            Stamp::of(&r.dir.join(files::SUMMARY)),
            Stamp::of(&r.dir.join(files::TRIALS)),
        );
        if let Some((s, row)) = self.done.lock().unwrap_or_else(|e| e.into_inner()).get(&r.dir)
            && *s == stamps
        {
            let mut row = row.clone();
            if !stamps.1.exists() && row.error.is_none() {
                row.status = status(&r.dir, None);
            }
            return row;
        }
        let row = read_row(roots, r, cache);
        if row.error.is_none() {
            self.done.lock().unwrap_or_else(|e| e.into_inner()).insert(r.dir.clone(), (stamps, row.clone()));
        }
        row
    }
}

fn blank(roots: &[Root], r: &RunRef, error: String) -> RunRow {
    RunRow {
        id: r.id.clone(),
        path: r.display(roots),
        suite: String::new(),
        version: None,
        run_id: String::new(),
        started_at: String::new(),
        kind: Kind::Run,
        regraded_from: None,
        trajectories_run_id: String::new(),
        merged: false,
        partition: None,
        status: Status::Incomplete,
        trials_planned: 0,
        figures: Headline::default(),
        gates: Gates::default(),
        error: Some(error),
        interleaved: None,
    }
}

fn read_row(roots: &[Root], r: &RunRef, cache: &Cache) -> RunRow {
    let m: Manifest = match RunDir::open(&r.dir).and_then(|d| d.read_manifest()) {
        Ok(m) => m,
        Err(e) => return blank(roots, r, e.to_string()),
    };
    let (kind, regraded_from) = Kind::of(&m);
    let mut row = RunRow {
        id: r.id.clone(),
        path: r.display(roots),
        suite: m.suite.name.clone(),
        version: m.suite.version.clone(),
        run_id: m.run_id.clone(),
        started_at: m.started_at.clone(),
        kind,
        regraded_from,
        trajectories_run_id: m.trajectories_run_id().to_string(),
        merged: m.merged_from.is_some(),
        partition: m.partition.clone(),
        status: Status::Incomplete,
        trials_planned: m.cases.iter().map(|c| c.trials as u64).sum(),
        figures: Headline::default(),
        gates: Gates::default(),
        error: None,
        interleaved: m.interleaved.as_ref().and_then(|i| {
            // A run of perturbations: each perturbation's part is paired with the baseline's.
            if !i.perturbations.is_empty() {
                let base = crate::spec::BASELINE.to_string();
                let agent = i.perturbation.clone().unwrap_or_else(|| base.clone());
                let agents = std::iter::once(base).chain(i.perturbations.iter().cloned()).collect();
                return Some(AgentPart { run_id: i.run_id.clone(), agent, agents, base_id: None, perturbed: true });
            }
            let agent = m.agent.as_ref().and_then(|a| a.name.clone()).filter(|n| !n.is_empty())?;
            Some(AgentPart {
                run_id: i.run_id.clone(),
                agent,
                agents: i.agents.clone(),
                base_id: None,
                perturbed: false,
            })
        }),
    };
    let summary = r.dir.join(files::SUMMARY);
    if summary.is_file() {
        match head::read(&summary) {
            Ok(h) => {
                row.status = status(&r.dir, Some(&h));
                row.figures = from_head(&h);
                row.gates = Gates::of(&h.gates);
                return row;
            }
            Err(e) => row.error = Some(e.to_string()),
        }
    }
    // No (readable) summary.json: the records say how far the run got.
    match cache.with(r, |l| (from_summary(&l.run.summary, &l.run.gates), Gates::of(&l.run.gates))) {
        Ok((figures, gates)) => {
            row.figures = figures;
            row.gates = gates;
        }
        Err(e) => row.error = Some(e.to_string()),
    }
    if row.error.is_none() {
        row.status = status(&r.dir, None);
    }
    row
}

/// A small, stable hash (FNV-1a) for change stamps.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
}
