//! Adaptive trials (SPEC §20): the design that decides, round by round,
//! which trials run, and the gates' anytime-valid verdicts. One engine for
//! the run that schedules the rounds and for a run dir read back (the rounds
//! are replayed from the trials' outcomes: trials.jsonl stays the one truth).
//!
//! The rounds. Every case runs its `min` trials first; the first
//! `min(min)` trials of every case, taken trial number by trial number, are
//! *sweeps*: one observation each, `Σ share_c · y_c`, whose mean is the
//! figure itself. Then each round draws as many cases as the run has, each
//! draw a case `c` with a probability `q_c` fixed before the round
//! ([`allocation`]: half by weight, half by each case's uncertainty so
//! far); the drawn case runs its next trial, which enters the sequence as
//! `y · share_c / q_c` ([`Weighted`]). Both kinds of observation have the
//! figure as their mean given the past, so the importance-weighted betting
//! sequence of `stats::sequence` is valid whatever the allocation did.
//!
//! A draw that falls on a case that already had its `max` runs no trial,
//! and a trial that ended in an infrastructure error has no outcome: either
//! enters as a failure in the sequence that gives the lower bound and as a
//! success in the one that gives the upper bound (the worst case for each
//! side), so each one-sided bound stays valid ([`Sequence::one_sided`]) and
//! the two together are a 95% sequence.
//!
//! A difference between two conditions (`delta pass^1 B-A`, `drop pass^1
//! @NAME`) is the mean of `(1 + y_plus − y_minus) / 2` over the paired
//! trials (the same case and trial number), mapped back to [-1, 1].

use serde::{Deserialize, Serialize};

use super::sequence::{Weighted, allocation};
use crate::record::Outcome;
use crate::spec::gate::{Gate, Metric, Scope, Verdict};

/// The sequences' error: 95% sequences.
pub const ALPHA: f64 = 0.05;
/// The share of every draw spread by weight (what bounds the weighted observations).
pub const FLOOR: f64 = 0.5;
/// What summary.json says the method is.
pub const METHOD: &str = "betting confidence sequence (Waudby-Smith & Ramdas 2024), 95%, \
                          importance-weighted over cases (floor 0.5), one-sided bounds worst-case for capped draws";

/// The run's design: per case (manifest order) its weight's share, its
/// `min` and `max` trials; the seed the draws come from.
#[derive(Debug, Clone)]
pub struct Design {
    pub shares: Vec<f64>,
    pub min: Vec<u32>,
    pub max: Vec<u32>,
    pub seed: u64,
    /// How many trials a draw runs (the conditions of a paired run: one per agent).
    pub conditions: u32,
}

impl Design {
    /// A design over cases of these weights.
    pub fn new(weights: &[f64], min: Vec<u32>, max: Vec<u32>, seed: u64, conditions: u32) -> Design {
        let total: f64 = weights.iter().sum();
        let shares = weights.iter().map(|w| if total > 0.0 { w / total } else { 0.0 }).collect();
        Design { shares, min, max, seed, conditions: conditions.max(1) }
    }
}

/// The figure a gate's sequence is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// pass^1 (= accepted, = pass@1) of one condition: the weighted mean of the cases' success probabilities.
    Rate(usize),
    /// `plus`'s pass^1 minus `minus`'s, paired case by case and trial by trial.
    Diff { plus: usize, minus: usize },
}

/// A gate the sequence decides.
#[derive(Debug, Clone)]
pub struct SeqGate {
    pub name: String,
    pub figure: Figure,
    pub threshold: f64,
    /// The figure must be at least the threshold (else at most).
    pub minimum: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    Pass,
    Fail,
    Undecided,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

/// One gate as the adaptive run decided it (summary.json `adaptive.gates`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdaptiveGate {
    pub name: String,
    pub threshold: f64,
    pub verdict: GateVerdict,
    /// The trials run when it was decided (None: undecided).
    pub decided_at_trials: Option<u32>,
    /// The confidence sequence when the run stopped.
    pub sequence: Bounds,
}

/// summary.json `adaptive` (SPEC §20).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Adaptive {
    pub rounds: u32,
    /// Trials the design ran.
    pub trials: u32,
    /// The fixed design's trials: every case its `max`.
    pub trials_max: u32,
    pub method: String,
    /// `undecided = "pass"` in the suite: an undecided gate does not fail the run.
    pub undecided: String,
    /// The design reached its stopping rule (false: the run was cut short and
    /// its rounds end before it; resume it).
    pub finished: bool,
    pub gates: Vec<AdaptiveGate>,
}

impl Adaptive {
    /// Whether a gate's verdict lets the run pass.
    pub fn passes(&self, g: &AdaptiveGate) -> bool {
        match g.verdict {
            GateVerdict::Pass => true,
            GateVerdict::Fail => false,
            GateVerdict::Undecided => self.undecided == "pass",
        }
    }
}

/// One observation-to-be of the current round.
#[derive(Debug, Clone, Copy)]
enum Draw {
    /// Trial number `n` of every case.
    Sweep(u32),
    /// A drawn case with its probability; the trial it runs (None: the case had its max).
    One { case: usize, q: f64, trial: Option<u32> },
}

struct FigureState {
    figure: Figure,
    /// Per case: the sum of the outcomes in [0, 1] and how many (for the allocation).
    sum: Vec<f64>,
    seen: Vec<u32>,
    /// Failures where there is no outcome (the lower bound) …
    low: Weighted,
    /// … and successes (the upper bound).
    high: Weighted,
}

impl FigureState {
    /// Feed a round: its draws, with the outcomes `ys` of its trials (in
    /// `trials`' order); a trial without one is the worst case on each side.
    fn feed(&mut self, shares: &[f64], draws: &[Draw], trials: &[(usize, u32)], ys: &[Option<f64>]) {
        let at: std::collections::HashMap<(usize, u32), Option<f64>> =
            trials.iter().copied().zip(ys.iter().copied()).collect();
        let of = |c: usize, t: u32| -> Option<f64> { at.get(&(c, t)).copied().flatten() };
        for (&(c, _), y) in trials.iter().zip(ys) {
            if let Some(y) = y {
                self.sum[c] += y;
                self.seen[c] += 1;
            }
        }
        for d in draws {
            match *d {
                Draw::Sweep(t) => {
                    let (mut lo, mut hi) = (0.0, 0.0);
                    for (c, w) in shares.iter().enumerate() {
                        let y = of(c, t);
                        lo += w * y.unwrap_or(0.0);
                        hi += w * y.unwrap_or(1.0);
                    }
                    self.low.push(1.0, 1.0, lo);
                    self.high.push(1.0, 1.0, hi);
                }
                Draw::One { case, q, trial } => {
                    let y = trial.and_then(|t| of(case, t));
                    self.low.push(shares[case], q, y.unwrap_or(0.0));
                    self.high.push(shares[case], q, y.unwrap_or(1.0));
                }
            }
        }
    }

    /// The sequence in the figure's units.
    fn bounds(&self) -> (f64, f64) {
        let (l, h) = (self.low.one_sided().0, self.high.one_sided().1);
        match self.figure {
            Figure::Rate(_) => (l, h),
            Figure::Diff { .. } => (2.0 * l - 1.0, 2.0 * h - 1.0),
        }
    }
}

struct GateState {
    spec: SeqGate,
    figure: usize,
    verdict: GateVerdict,
    at: Option<u32>,
}

/// What a trial's outcome is, as the engine asks for it: `Some(Some(y))`
/// accepted (1) or not (0); `Some(None)` no outcome (an infrastructure
/// error); None not recorded (a replay of a run cut short).
pub type Outcomes<'a> = dyn Fn(usize, usize, u32) -> Option<Option<f64>> + 'a;

/// The adaptive design, run or replayed.
pub struct Engine {
    design: Design,
    rng: fastrand::Rng,
    figures: Vec<FigureState>,
    gates: Vec<GateState>,
    /// Trials scheduled per case.
    n: Vec<u32>,
    pending: Vec<Draw>,
    /// The trials of the pending round, and of the rounds before.
    round_trials: Vec<(usize, u32)>,
    rounds: u32,
    trials: u32,
}

impl Engine {
    pub fn new(design: Design, gates: Vec<SeqGate>) -> Engine {
        let k = design.shares.len();
        let mut figures: Vec<FigureState> = Vec::new();
        let mut states = Vec::new();
        for g in gates {
            let i = match figures.iter().position(|f| f.figure == g.figure) {
                Some(i) => i,
                None => {
                    figures.push(FigureState {
                        figure: g.figure,
                        sum: vec![0.0; k],
                        seen: vec![0; k],
                        low: Weighted::new(ALPHA, FLOOR),
                        high: Weighted::new(ALPHA, FLOOR),
                    });
                    figures.len() - 1
                }
            };
            states.push(GateState { spec: g, figure: i, verdict: GateVerdict::Undecided, at: None });
        }
        let rng = fastrand::Rng::with_seed(design.seed ^ 0xada9_7e5e);
        Engine {
            n: vec![0; k],
            design,
            rng,
            figures,
            gates: states,
            pending: Vec::new(),
            round_trials: Vec::new(),
            rounds: 0,
            trials: 0,
        }
    }

    fn decided(&self) -> bool {
        self.gates.iter().all(|g| g.verdict != GateVerdict::Undecided)
    }

    fn open(&self) -> Vec<bool> {
        self.n.iter().zip(&self.design.max).map(|(n, m)| n < m).collect()
    }

    /// The next round's trials, (case, trial number) — each run once per
    /// condition — or None: every gate is decided, or every case had its max.
    pub fn next_round(&mut self) -> Option<Vec<(usize, u32)>> {
        let k = self.design.shares.len();
        self.pending.clear();
        self.round_trials.clear();
        if self.rounds == 0 {
            let sweeps = self.design.min.iter().copied().min().unwrap_or(0);
            self.pending.extend((1..=sweeps).map(Draw::Sweep));
            for c in 0..k {
                let min = self.design.min[c].min(self.design.max[c]);
                self.round_trials.extend((1..=min).map(|t| (c, t)));
                self.n[c] = min;
            }
        } else {
            let open = self.open();
            if self.decided() || !open.iter().any(|&o| o) {
                return None;
            }
            let q = self.allocation(&open);
            for _ in 0..k {
                let mut u = self.rng.f64();
                let case = q
                    .iter()
                    .position(|&x| {
                        u -= x;
                        u < 0.0
                    })
                    .unwrap_or(k - 1);
                let trial = (self.n[case] < self.design.max[case]).then(|| {
                    self.n[case] += 1;
                    self.n[case]
                });
                if let Some(t) = trial {
                    self.round_trials.push((case, t));
                }
                self.pending.push(Draw::One { case, q: q[case], trial });
            }
        }
        self.rounds += 1;
        self.trials += self.round_trials.len() as u32 * self.design.conditions;
        Some(self.round_trials.clone())
    }

    /// The mean over the figures some undecided gate is on of their allocations.
    fn allocation(&self, open: &[bool]) -> Vec<f64> {
        let k = self.design.shares.len();
        let live: Vec<&FigureState> = self
            .figures
            .iter()
            .enumerate()
            .filter(|(i, _)| self.gates.iter().any(|g| g.figure == *i && g.verdict == GateVerdict::Undecided))
            .map(|(_, f)| f)
            .collect();
        let mut q = vec![0.0; k];
        for f in &live {
            for (a, b) in q.iter_mut().zip(allocation(&self.design.shares, &f.sum, &f.seen, open, FLOOR)) {
                *a += b / live.len() as f64;
            }
        }
        q
    }

    /// A figure's outcome for one trial (see [`Outcomes`]).
    fn outcome(figure: Figure, y: &Outcomes<'_>, case: usize, trial: u32) -> Option<Option<f64>> {
        match figure {
            Figure::Rate(c) => y(c, case, trial),
            Figure::Diff { plus, minus } => {
                let (a, b) = (y(plus, case, trial)?, y(minus, case, trial)?);
                Some(a.zip(b).map(|(a, b)| (1.0 + a - b) / 2.0))
            }
        }
    }

    /// Feed the pending round's outcomes into the sequences and decide the
    /// gates. False (nothing fed) when an outcome is not recorded.
    pub fn observe(&mut self, y: &Outcomes<'_>) -> bool {
        let figures: Vec<Figure> = self.figures.iter().map(|f| f.figure).collect();
        let mut got: Vec<Vec<Option<f64>>> = Vec::with_capacity(figures.len());
        for &f in &figures {
            let mut v = Vec::with_capacity(self.round_trials.len());
            for &(c, t) in &self.round_trials {
                match Engine::outcome(f, y, c, t) {
                    Some(o) => v.push(o),
                    None => return false,
                }
            }
            got.push(v);
        }
        for (fs, ys) in self.figures.iter_mut().zip(&got) {
            fs.feed(&self.design.shares, &self.pending, &self.round_trials, ys);
        }
        for g in &mut self.gates {
            if g.verdict != GateVerdict::Undecided {
                continue;
            }
            let (l, h) = self.figures[g.figure].bounds();
            let t = g.spec.threshold;
            let verdict = match g.spec.minimum {
                true if l >= t => GateVerdict::Pass,
                true if h < t => GateVerdict::Fail,
                false if h <= t => GateVerdict::Pass,
                false if l > t => GateVerdict::Fail,
                _ => GateVerdict::Undecided,
            };
            if verdict != GateVerdict::Undecided {
                g.verdict = verdict;
                g.at = Some(self.trials);
            }
        }
        true
    }

    /// The trials scheduled per case so far.
    pub fn scheduled(&self) -> &[u32] {
        &self.n
    }

    /// summary.json's `adaptive` for the design so far.
    pub fn report(&self, finished: bool, undecided_passes: bool) -> Adaptive {
        Adaptive {
            rounds: self.rounds,
            trials: self.trials,
            trials_max: self.design.max.iter().sum::<u32>() * self.design.conditions,
            method: METHOD.to_string(),
            undecided: if undecided_passes { "pass" } else { "fail" }.to_string(),
            finished,
            gates: self
                .gates
                .iter()
                .map(|g| {
                    let (low, high) = self.figures[g.figure].bounds();
                    AdaptiveGate {
                        name: g.spec.name.clone(),
                        threshold: g.spec.threshold,
                        verdict: g.verdict,
                        decided_at_trials: g.at,
                        sequence: Bounds { low: tidy(low), high: tidy(high) },
                    }
                })
                .collect(),
        }
    }
}

/// A bound without the float noise of the grid's mapping (the grid is 1/1000).
fn tidy(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Replay the design over recorded outcomes: the rounds a run dir's trials
/// ran, to where the records end. Returns the report (finished when the
/// design reached its stopping rule) and the trials the rounds so far need.
pub fn replay(design: Design, gates: Vec<SeqGate>, undecided_passes: bool, y: &Outcomes<'_>) -> (Adaptive, u32) {
    let mut e = Engine::new(design, gates);
    loop {
        if e.next_round().is_none() {
            return (e.report(true, undecided_passes), e.trials);
        }
        if !e.observe(y) {
            return (e.report(false, undecided_passes), e.trials);
        }
    }
}

/// A trial's outcome as the sequence sees it: accepted 1, not accepted 0,
/// an infrastructure error none (the worst case on each side).
pub fn outcome_value(o: Outcome) -> Option<f64> {
    match o {
        Outcome::Accepted => Some(1.0),
        Outcome::InfraError => None,
        _ => Some(0.0),
    }
}

/// Whether a figure is one an adaptive run's sequence decides: pass^1,
/// pass@1 or accepted (the weighted mean of the cases' success probabilities).
pub fn is_rate(m: Metric) -> bool {
    matches!(m, Metric::PassHat(1) | Metric::PassAt(1) | Metric::Accepted)
}

/// The gates of a one-agent run the sequence decides: a rate's gate, plain or
/// naming the run's `agent`. The others are decided as in any run, on the
/// trials that ran.
pub fn seq_gates(gates: &[Gate], agent: Option<&str>) -> Vec<SeqGate> {
    gates
        .iter()
        .filter(|g| is_rate(g.metric))
        .filter(|g| match &g.scope {
            Scope::Run => true,
            Scope::Agent(a) => Some(a.as_str()) == agent,
            _ => false,
        })
        .map(|g| SeqGate { name: g.name.clone(), figure: Figure::Rate(0), threshold: g.threshold, minimum: true })
        .collect()
}

/// The gates of a run of several conditions (`parts`: its agents, or the
/// baseline then each perturbation) the sequence decides, named as the run's
/// verdicts name them: a difference of rates (`delta pass^1 B-A`: paired,
/// at least; `drop pass^1 @NAME`: the baseline's minus the perturbation's, at
/// most), a rate naming a part, and a plain rate gate (per agent as
/// `GATE@AGENT`; in a run of perturbations, the baseline's).
pub fn paired_gates(gates: &[Gate], parts: &[String], perturbed: bool) -> Vec<SeqGate> {
    let names: Vec<&str> = parts.iter().map(String::as_str).collect();
    let index = |n: &str| names.iter().position(|p| *p == n);
    let mut out = Vec::new();
    for g in gates.iter().filter(|g| is_rate(g.metric)) {
        let seq =
            |name: String, figure: Figure, minimum: bool| SeqGate { name, figure, threshold: g.threshold, minimum };
        match &g.scope {
            Scope::Run if perturbed => out.push(seq(g.name.clone(), Figure::Rate(0), true)),
            Scope::Run => {
                for (i, n) in names.iter().enumerate() {
                    out.push(seq(format!("{}@{n}", g.name), Figure::Rate(i), true));
                }
            }
            Scope::Agent(a) => {
                if let Some(i) = index(a) {
                    out.push(seq(g.name.clone(), Figure::Rate(i), true));
                }
            }
            Scope::Delta { pair } => {
                if let Some((c, b)) = Scope::delta_pair(pair, &names).and_then(|(c, b)| index(c).zip(index(b))) {
                    out.push(seq(g.name.clone(), Figure::Diff { plus: c, minus: b }, true));
                }
            }
            Scope::Drop(p) => {
                if let Some(i) = index(p).filter(|_| perturbed) {
                    out.push(seq(g.name.clone(), Figure::Diff { plus: 0, minus: i }, false));
                }
            }
            Scope::Perturbation(_) => {}
        }
    }
    out
}

/// Put the sequential verdicts in the gates' place: a gate the sequence
/// decided passes or fails by it (an undecided one as the suite says), the
/// sequence's bound that decided it as its value. `decide`: the run is
/// complete (else none passes, as with any incomplete run, and the note
/// says `incomplete`).
pub fn apply(a: &Adaptive, verdicts: &mut [Verdict], decide: bool, incomplete: &str) {
    for v in verdicts.iter_mut() {
        let Some(g) = a.gates.iter().find(|g| g.name == v.name) else { continue };
        let (low, high) = (g.sequence.low, g.sequence.high);
        v.passed = decide && a.passes(g);
        // The bound that decided it (undecided: the figure as §7 has it).
        match g.verdict {
            GateVerdict::Fail => v.value = Some(high),
            GateVerdict::Pass => v.value = Some(low),
            GateVerdict::Undecided => {}
        }
        let how = match (g.verdict, g.decided_at_trials) {
            (GateVerdict::Undecided, _) => {
                format!("undecided after {} trials (undecided = \"{}\")", a.trials, a.undecided)
            }
            (v, Some(n)) => format!("{} after {n} trials", if v == GateVerdict::Pass { "pass" } else { "fail" }),
            (v, None) => format!("{v:?}"),
        };
        let mut note = format!(
            "adaptive: {how}; anytime-valid 95% sequence [{low:.3}, {high:.3}] (the interval beside it is §7's case resampling)"
        );
        if !decide {
            note = format!("{note}; {incomplete}");
        }
        v.note = Some(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// One simulated run: cases of rates `p` (condition 0; condition 1 has
    /// rates `p2` when given), the gates, min and max; the outcomes drawn as
    /// each round asks for them. Returns the report and the trials per case.
    fn simulate(
        p: &[f64],
        p2: Option<&[f64]>,
        gates: Vec<SeqGate>,
        min: u32,
        max: u32,
        seed: u64,
    ) -> (Adaptive, Vec<u32>) {
        let k = p.len();
        let conditions = if p2.is_some() { 2 } else { 1 };
        let design = Design::new(&vec![1.0; k], vec![min; k], vec![max; k], seed, conditions);
        let mut e = Engine::new(design, gates);
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_mul(31) + 1);
        let mut ys: HashMap<(usize, usize, u32), Option<f64>> = HashMap::new();
        while let Some(trials) = e.next_round() {
            for (c, t) in trials {
                ys.insert((0, c, t), Some((rng.f64() < p[c]) as u32 as f64));
                if let Some(p2) = p2 {
                    ys.insert((1, c, t), Some((rng.f64() < p2[c]) as u32 as f64));
                }
            }
            assert!(e.observe(&|cond, c, t| ys.get(&(cond, c, t)).copied()));
        }
        (e.report(true, false), e.scheduled().to_vec())
    }

    fn at_least(name: &str, threshold: f64) -> SeqGate {
        SeqGate { name: name.into(), figure: Figure::Rate(0), threshold, minimum: true }
    }

    const CASES: [f64; 10] = [0.98, 0.95, 0.9, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.3]; // mean 0.748

    #[test]
    fn a_clear_gate_stops_early_and_a_clear_failure_too() {
        let (a, _) = simulate(&CASES, None, vec![at_least("pass^1", 0.4)], 2, 40, 1);
        assert_eq!(a.gates[0].verdict, GateVerdict::Pass, "{a:?}");
        assert!(a.trials < 150, "a clear gate took {} of {} trials", a.trials, a.trials_max);
        let (a, _) = simulate(&CASES, None, vec![at_least("pass^1", 0.97)], 2, 40, 2);
        assert_eq!(a.gates[0].verdict, GateVerdict::Fail, "{a:?}");
        assert!(a.trials < 200, "a clear failure took {} of {} trials", a.trials, a.trials_max);
        let d = a.gates[0].decided_at_trials.unwrap();
        assert!(d <= a.trials && a.gates[0].sequence.high < 0.97, "{a:?}");
    }

    #[test]
    fn a_borderline_gate_is_undecided_at_max_and_no_case_passes_max() {
        let (a, n) = simulate(&CASES, None, vec![at_least("pass^1", 0.75)], 2, 12, 3);
        assert_eq!(a.gates[0].verdict, GateVerdict::Undecided, "{a:?}");
        assert!(n.iter().all(|&n| n == 12), "{n:?}");
        assert_eq!((a.trials, a.trials_max), (120, 120));
        let s = a.gates[0].sequence;
        assert!(s.low < 0.748 && s.high > 0.748, "{s:?}");
    }

    #[test]
    fn uncertain_cases_get_more_trials_and_the_sequence_still_covers_the_truth() {
        let p = [0.0, 1.0, 0.5, 0.5, 0.0, 1.0];
        let truth = p.iter().sum::<f64>() / p.len() as f64;
        let (mut certain, mut uncertain, mut missed, mut estimate) = (0u32, 0u32, 0u32, 0.0);
        let runs = 60;
        for seed in 0..runs {
            if seed < 20 {
                // A gate decided after some rounds, long before any case is at its max.
                let (_, n) = simulate(&p, None, vec![at_least("pass^1", 0.4)], 2, 200, seed);
                certain += n[0] + n[1] + n[4] + n[5];
                uncertain += n[2] + n[3];
            }
            // An undecidable gate: the design runs to the max on every case.
            let (a, _) = simulate(&p, None, vec![at_least("pass^1", truth)], 2, 20, seed);
            let s = a.gates[0].sequence;
            missed += (truth < s.low || truth > s.high) as u32;
            estimate += (s.low + s.high) / 2.0;
        }
        // Per case: the uncertain ones had more of the trials.
        assert!(uncertain as f64 / 2.0 > 1.2 * certain as f64 / 4.0, "uncertain {uncertain}, certain {certain}");
        assert!(missed as f64 <= 0.05 * runs as f64, "missed the truth in {missed} of {runs}");
        let mid = estimate / runs as f64;
        assert!((mid - truth).abs() < 0.1, "the sequences centre on {mid}, the truth is {truth}");
    }

    #[test]
    fn the_sequence_covers_the_truth_under_optional_stopping_with_capped_cases() {
        // Small max: many draws fall on capped cases.
        let truth = CASES.iter().sum::<f64>() / 10.0;
        let mut missed = 0;
        for seed in 0..200 {
            let (a, _) = simulate(&CASES, None, vec![at_least("pass^1", 0.6)], 1, 6, seed);
            let s = a.gates[0].sequence;
            missed += (truth < s.low - 1e-9 || truth > s.high + 1e-9 || a.gates[0].verdict == GateVerdict::Fail) as u32;
        }
        assert!(missed <= 10, "wrong or missed in {missed} of 200");
    }

    #[test]
    fn a_paired_difference_is_decided() {
        let a = [0.2, 0.3, 0.1, 0.4, 0.2, 0.3, 0.2, 0.1];
        let b = [0.95, 0.9, 1.0, 0.9, 0.95, 1.0, 0.9, 0.95];
        let g = SeqGate {
            name: "delta pass^1 B-A".into(),
            figure: Figure::Diff { plus: 1, minus: 0 },
            threshold: 0.0,
            minimum: true,
        };
        let (r, _) = simulate(&a, Some(&b), vec![g], 2, 20, 4);
        assert_eq!(r.gates[0].verdict, GateVerdict::Pass, "{r:?}");
        assert!(r.trials < r.trials_max / 2, "{r:?}");
        assert!(r.gates[0].sequence.low > 0.0 && r.gates[0].sequence.high <= 1.0, "{r:?}");
        // A drop (at most the threshold) that clearly holds the other way.
        let g =
            SeqGate { name: "drop".into(), figure: Figure::Diff { plus: 1, minus: 0 }, threshold: 0.1, minimum: false };
        let (r, _) = simulate(&a, Some(&b), vec![g], 2, 20, 5);
        assert_eq!(r.gates[0].verdict, GateVerdict::Fail, "{r:?}");
    }

    #[test]
    fn a_replay_of_the_records_gives_the_run_and_stops_where_they_end() {
        let design = || Design::new(&[1.0; 4], vec![2; 4], vec![10; 4], 9, 1);
        let gates = || vec![at_least("pass^1", 0.6)];
        let p = [0.9, 0.8, 0.5, 0.7];
        let mut e = Engine::new(design(), gates());
        let mut rng = fastrand::Rng::with_seed(5);
        let mut ys: HashMap<(usize, usize, u32), Option<f64>> = HashMap::new();
        let mut rounds = Vec::new();
        while let Some(trials) = e.next_round() {
            for &(c, t) in &trials {
                ys.insert((0, c, t), Some((rng.f64() < p[c]) as u32 as f64));
            }
            rounds.push(trials);
            assert!(e.observe(&|cond, c, t| ys.get(&(cond, c, t)).copied()));
        }
        let live = e.report(true, false);
        let (again, needed) = replay(design(), gates(), false, &|cond, c, t| ys.get(&(cond, c, t)).copied());
        assert_eq!(serde_json::to_value(&live).unwrap(), serde_json::to_value(&again).unwrap());
        assert_eq!(needed, live.trials);
        if rounds.len() > 1 {
            // The last round's first trial missing: the replay stops there, unfinished.
            let gone = rounds.last().unwrap()[0];
            let (cut, needed) = replay(design(), gates(), false, &|cond, c, t| {
                if (c, t) == gone { None } else { ys.get(&(cond, c, t)).copied() }
            });
            assert!(!cut.finished && needed == live.trials, "{cut:?}");
        }
    }

    /// The figures of docs/benchmarks.md ("Adaptive trials, simulated"):
    /// `cargo test --lib adaptive::tests::simulated_gates -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn simulated_gates() {
        let runs = 200;
        for (name, threshold) in [("clear pass", 0.5), ("clear fail", 0.95), ("borderline", 0.73)] {
            let (mut wrong, mut undecided, mut used) = (0, 0, 0u64);
            for seed in 0..runs {
                let (a, _) = simulate(&CASES, None, vec![at_least(name, threshold)], 2, 40, 7000 + seed);
                used += a.trials as u64;
                match a.gates[0].verdict {
                    GateVerdict::Undecided => undecided += 1,
                    v => wrong += ((v == GateVerdict::Pass) != (0.748 >= threshold)) as u32,
                }
            }
            println!(
                "{name:11} pass^1 0.748 vs {threshold}: wrong {:.1}%, undecided {:.1}%, mean trials {:.0} of the fixed design's 400",
                100.0 * wrong as f64 / runs as f64,
                100.0 * undecided as f64 / runs as f64,
                used as f64 / runs as f64
            );
            assert!(wrong as f64 <= 0.05 * runs as f64);
        }
    }
}
