//! An adaptive run (SPEC §20): the trials come in rounds, each decided by
//! `stats::adaptive::Engine` from the outcomes of the rounds before. The
//! [`Rounds`] source hands the scheduler one round's trials; a worker that
//! asks for more while the round is still running waits until its last trial
//! is made, then the engine feeds the outcomes to the gates' sequences and
//! draws the next round, or ends the run (every gate decided, or every case
//! at its max).
//!
//! A resumed run replays its rounds over the trials it kept (the draws are
//! seeded and depend only on the outcomes before them, so the same rounds
//! come back), announces the kept ones in their places, and runs the rest of
//! the round that was cut short, then further rounds.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::planned::{Kept, guarded, run_trial};
use super::scheduler::{Placed, Source, Start, trace_bytes};
use crate::error::{Error, Result};
use crate::record::manifest::AdaptiveDesign;
use crate::stats::adaptive::{Design, Engine, outcome_value, paired_gates, seq_gates};
use crate::trial::{self, Plan, Position, TrialOutput};
use crate::util::cancel;
use crate::util::paths::display_path;

/// The least trials a case gets when neither it nor the suite says.
pub const DEFAULT_MIN: u32 = 2;

/// Whether the run is adaptive, and its design: `--adaptive`, or a
/// `trials = { min, max }` in the suite or a case (unless `--trials N` asks
/// for a fixed number). Each case's max is its planned trials; its min its
/// own, else the suite's, else [`DEFAULT_MIN`], at most its max. Refused
/// (exit 2) when no gate is one the sequence decides.
pub fn design(
    plan: &Plan,
    flag: bool,
    trials_flag: Option<u32>,
    agent: Option<&str>,
) -> Result<Option<AdaptiveDesign>> {
    let suite = &plan.suite;
    let ranged = suite.trials_min.is_some() || plan.cases.iter().any(|c| c.spec.trials_min.is_some());
    if !flag && (trials_flag.is_some() || !ranged) {
        return Ok(None);
    }
    if seq_gates(&suite.gates, agent).is_empty() {
        return Err(Error::Input(format!(
            "{}: an adaptive run decides its gates on pass^1, pass@1 or accepted, and the suite has none of those gates; \
             add one (gate = {{ [\"pass^1\"] = 0.8 }}) or run a fixed number of trials (--trials N)",
            display_path(&suite.path)
        )));
    }
    let mut d = design_without_gates(plan, trials_flag);
    d.undecided = if suite.undecided_passes { "pass" } else { "fail" }.to_string();
    Ok(Some(d))
}

/// The engine for a plan's design.
fn engine(plan: &Plan, d: &AdaptiveDesign) -> Engine {
    // A case awaiting review weighs nothing in the sequences (SPEC §23): it plays its `min` trials only.
    let weights: Vec<f64> =
        plan.cases.iter().map(|c| if c.spec.pending_review { 0.0 } else { c.spec.weight }).collect();
    let max = plan.cases.iter().map(|c| c.trials).collect();
    let design = Design::new(&weights, d.min.clone(), max, plan.seed, 1);
    let agent = plan.agent_name(0);
    Engine::new(design, seq_gates(&plan.suite.gates, agent))
}

/// What the rounds share between the workers.
struct State {
    engine: Engine,
    /// The current round's trials to run: (case, trial, announced index).
    units: Vec<(usize, u32, usize)>,
    /// Units of the round handed out, and made.
    handed: usize,
    made: usize,
    /// The position of the round's first unit.
    base: usize,
    /// The next announced index.
    next_index: usize,
    /// Outcomes so far, by (case, trial).
    outcomes: HashMap<(usize, u32), Option<f64>>,
    /// Positions already made (an abandoned worker's unit is made once).
    made_at: std::collections::HashSet<usize>,
    /// Every unit handed out, by position.
    by_pos: Vec<(usize, u32, usize)>,
    /// Every trial of the rounds so far (kept or run), in announced order.
    order: Vec<(usize, u32)>,
    done: bool,
}

/// The trials of an adaptive run, round by round.
pub struct Rounds {
    plan: Arc<Plan>,
    state: Mutex<State>,
    changed: Condvar,
    kept: Mutex<Vec<Placed>>,
}

impl Rounds {
    /// The rounds of `plan`'s design; `kept` (by (case, trial)): the trials
    /// an interrupted run finished, replayed first.
    pub fn new(plan: &Arc<Plan>, d: &AdaptiveDesign, mut kept: BTreeMap<(usize, u32), Kept>) -> Rounds {
        let mut st = State {
            engine: engine(plan, d),
            units: Vec::new(),
            handed: 0,
            made: 0,
            base: 0,
            next_index: 0,
            outcomes: HashMap::new(),
            made_at: Default::default(),
            by_pos: Vec::new(),
            order: Vec::new(),
            done: false,
        };
        let mut placed = Vec::new();
        // Replay the rounds the kept trials ran; the first one they do not
        // complete is the current round.
        loop {
            let Some(round) = st.engine.next_round() else {
                st.done = true;
                break;
            };
            for (c, t) in round {
                let index = st.next_index;
                st.next_index += 1;
                st.order.push((c, t));
                match kept.remove(&(c, t)) {
                    Some(k) => {
                        st.outcomes.insert((c, t), outcome_value(k.trace.record.outcome));
                        placed.push(Placed {
                            index,
                            case: c,
                            out: TrialOutput { trace: k.trace, tests: k.tests, state: None },
                            bytes: None,
                        });
                    }
                    None => st.units.push((c, t, index)),
                }
            }
            if !st.units.is_empty() {
                break;
            }
            let outcomes = &st.outcomes;
            let y = |_: usize, c: usize, t: u32| outcomes.get(&(c, t)).copied();
            st.engine.observe(&y);
        }
        Rounds { plan: plan.clone(), state: Mutex::new(st), changed: Condvar::new(), kept: Mutex::new(placed) }
    }

    /// The round is made: feed it to the sequences and draw the next.
    fn advance(st: &mut State) {
        let outcomes = &st.outcomes;
        let y = |_: usize, c: usize, t: u32| outcomes.get(&(c, t)).copied();
        st.engine.observe(&y);
        st.base += st.units.len();
        st.units.clear();
        st.handed = 0;
        st.made = 0;
        match st.engine.next_round() {
            None => st.done = true,
            Some(round) => {
                for (c, t) in round {
                    st.units.push((c, t, st.next_index));
                    st.order.push((c, t));
                    st.next_index += 1;
                }
            }
        }
    }

    /// Every trial of the rounds, in the order they were announced (the
    /// order of an uninterrupted run's trials.jsonl).
    pub fn order(&self) -> Vec<(usize, u32)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).order.clone()
    }

    /// Note a unit's outcome (once), and wake the workers waiting for the round.
    fn made(&self, pos: usize, out: &TrialOutput) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !st.made_at.insert(pos) {
            return;
        }
        let (c, t, _) = st.by_pos[pos];
        st.outcomes.insert((c, t), outcome_value(out.trace.record.outcome));
        st.made += 1;
        self.changed.notify_all();
    }

    fn placed_of(&self, pos: usize, mut out: TrialOutput) -> Placed {
        let (case, _, index) = self.state.lock().unwrap_or_else(|p| p.into_inner()).by_pos[pos];
        let bytes = Some(trace_bytes(&mut out.trace));
        Placed { index, case, out, bytes }
    }
}

impl Source for Rounds {
    /// (case, trial number).
    type Unit = (usize, u32);
    type Made = Placed;

    fn start(&self) -> Start<'_> {
        // How many trials is not known before the rounds decide it; each case's max is.
        let max = self.plan.cases.iter().map(|c| c.trials).collect();
        Start { suite: &self.plan.suite, plan: Some(&self.plan), trials: None, per_case: max }
    }

    fn claim(&self) -> Vec<(usize, (usize, u32))> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if st.done || cancel::requested() {
                self.changed.notify_all();
                return Vec::new();
            }
            if st.handed < st.units.len() {
                let (c, t, index) = st.units[st.handed];
                let pos = st.base + st.handed;
                st.handed += 1;
                st.by_pos.push((c, t, index));
                return vec![(pos, (c, t))];
            }
            if st.made == st.units.len() {
                Rounds::advance(&mut st);
                continue;
            }
            st = self.changed.wait_timeout(st, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn label(&self, unit: &(usize, u32)) -> (Option<usize>, Option<u32>) {
        (Some(unit.0), Some(unit.1))
    }

    fn run(&self, pos: usize, (case, number): (usize, u32)) -> Placed {
        let at = Position::first(case, number);
        let out = guarded(&self.plan, at, || run_trial(&self.plan, at));
        self.made(pos, &out);
        self.placed_of(pos, out)
    }

    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Placed {
        let (case, number, _) = self.state.lock().unwrap_or_else(|p| p.into_inner()).by_pos[pos];
        let why = match overran {
            Some(over) => format!(
                "the trial overran its time limit by more than {} s in code no limit could stop; its worker was abandoned",
                over.as_secs()
            ),
            None => "the worker running the trial stopped unexpectedly".to_string(),
        };
        let out = trial::internal_error(&self.plan, Position::first(case, number), why);
        self.made(pos, &out);
        self.placed_of(pos, out)
    }

    fn kept(&self) -> Vec<Placed> {
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn stop(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.done = true;
        self.changed.notify_all();
    }
}

// ---------------------------------------------------------------------------
// Paired rounds: an interleaved run (several agents, or the baseline and its
// perturbations) whose blocks come in rounds.

/// Whether an interleaved run is adaptive, and its design (see [`design`]):
/// its gates are the paired ones (`stats::adaptive::paired_gates`). A
/// perturbation must apply to every case: a case it does not change has no
/// paired trial, and its worst case would never let a gate be decided.
pub fn paired_design(plan: &Plan, flag: bool, trials_flag: Option<u32>) -> Result<Option<AdaptiveDesign>> {
    let suite = &plan.suite;
    let ranged = suite.trials_min.is_some() || plan.cases.iter().any(|c| c.spec.trials_min.is_some());
    if !flag && (trials_flag.is_some() || !ranged) {
        return Ok(None);
    }
    let parts: Vec<String> = plan.conditions.iter().map(|c| plan.part_name(c)).collect();
    if paired_gates(&suite.gates, &parts, plan.perturbs()).is_empty() {
        return Err(Error::Input(format!(
            "{}: an adaptive run of several agents or perturbations decides its gates on pass^1, pass@1 or accepted \
             (a part's, or a difference: delta …, drop …), and the suite has none of those gates; add one or run a \
             fixed number of trials (--trials N)",
            display_path(&suite.path)
        )));
    }
    for (c, name) in parts.iter().enumerate() {
        let applies = (0..plan.cases.len()).filter(|&i| plan.applies(i, c)).count();
        if applies < plan.cases.len() {
            return Err(Error::Input(format!(
                "{}: an adaptive run pairs every case's trials across its parts, and perturbation '{name}' applies to {applies} of the {} cases; declare it for the suite, or run a fixed number of trials (--trials N)",
                display_path(&suite.path),
                plan.cases.len()
            )));
        }
    }
    let mut d = design_without_gates(plan, trials_flag);
    d.undecided = if suite.undecided_passes { "pass" } else { "fail" }.to_string();
    Ok(Some(d))
}

/// Each case's min (see [`design`]).
fn design_without_gates(plan: &Plan, trials_flag: Option<u32>) -> AdaptiveDesign {
    let suite = &plan.suite;
    let min = plan
        .cases
        .iter()
        .map(|c| {
            let own = if trials_flag.is_some() { None } else { c.spec.trials_min };
            own.or(suite.trials_min).unwrap_or(DEFAULT_MIN).min(c.trials)
        })
        .collect();
    AdaptiveDesign { min, undecided: "fail".into() }
}

/// What the paired rounds share between the workers.
struct PairedState {
    engine: Engine,
    /// The current round's trials, block by block, each block's conditions in its order.
    units: Vec<Position>,
    handed: usize,
    made: usize,
    /// The position of the round's first unit.
    base: usize,
    /// Blocks so far (the rotation of the conditions' order).
    blocks: usize,
    outcomes: HashMap<(usize, usize, u32), Option<f64>>,
    made_at: std::collections::HashSet<usize>,
    by_pos: Vec<Position>,
    done: bool,
}

/// The blocks of an adaptive interleaved run, round by round: every block
/// (case, trial) runs each condition back to back on one worker, in an
/// order that rotates from block to block (where it starts drawn from the
/// seed), as in `run::interleave`.
pub struct PairedRounds {
    plan: Arc<Plan>,
    parts: Vec<String>,
    start: usize,
    state: Mutex<PairedState>,
    changed: Condvar,
}

impl PairedRounds {
    pub fn new(plan: &Arc<Plan>, d: &AdaptiveDesign) -> PairedRounds {
        let parts: Vec<String> = plan.conditions.iter().map(|c| plan.part_name(c)).collect();
        let weights: Vec<f64> = plan.cases.iter().map(|c| c.spec.weight).collect();
        let max = plan.cases.iter().map(|c| c.trials).collect();
        let design = Design::new(&weights, d.min.clone(), max, plan.seed, parts.len() as u32);
        let engine = Engine::new(design, paired_gates(&plan.suite.gates, &parts, plan.perturbs()));
        let k = parts.len().max(1);
        let start = fastrand::Rng::with_seed(plan.seed ^ 0x1a7e_41ea).usize(..k);
        let mut st = PairedState {
            engine,
            units: Vec::new(),
            handed: 0,
            made: 0,
            base: 0,
            blocks: 0,
            outcomes: HashMap::new(),
            made_at: Default::default(),
            by_pos: Vec::new(),
            done: false,
        };
        PairedRounds::next_round(&mut st, k, start);
        PairedRounds { plan: plan.clone(), parts, start, state: Mutex::new(st), changed: Condvar::new() }
    }

    /// Draw the next round's blocks (or end the run).
    fn next_round(st: &mut PairedState, k: usize, start: usize) {
        st.base += st.units.len();
        st.units.clear();
        st.handed = 0;
        st.made = 0;
        match st.engine.next_round() {
            None => st.done = true,
            Some(round) => {
                for (case, number) in round {
                    let b = st.blocks;
                    st.blocks += 1;
                    st.units.extend((0..k).map(|i| Position { case, number, condition: (start + b + i) % k }));
                }
            }
        }
    }

    fn made(&self, pos: usize, out: &TrialOutput) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !st.made_at.insert(pos) {
            return;
        }
        let at = st.by_pos[pos];
        st.outcomes.insert((at.condition, at.case, at.number), outcome_value(out.trace.record.outcome));
        st.made += 1;
        self.changed.notify_all();
    }

    fn placed_of(&self, pos: usize, mut out: TrialOutput) -> Placed {
        let at = self.state.lock().unwrap_or_else(|p| p.into_inner()).by_pos[pos];
        let bytes = Some(trace_bytes(&mut out.trace));
        Placed { index: pos, case: at.case, out, bytes }
    }
}

impl super::interleave::Parts for PairedRounds {
    fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
    fn parts(&self) -> &[String] {
        &self.parts
    }
    fn part_share(&self, _c: usize) -> (Option<usize>, Vec<u32>) {
        (None, self.plan.cases.iter().map(|c| c.trials).collect())
    }
}

impl Source for PairedRounds {
    type Unit = Position;
    type Made = Placed;

    fn start(&self) -> Start<'_> {
        let k = self.parts.len() as u32;
        let max = self.plan.cases.iter().map(|c| c.trials * k).collect();
        Start { suite: &self.plan.suite, plan: Some(&self.plan), trials: None, per_case: max }
    }

    /// A whole block: its conditions run back to back on one worker.
    fn claim(&self) -> Vec<(usize, Position)> {
        let k = self.parts.len().max(1);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if st.done || cancel::requested() {
                self.changed.notify_all();
                return Vec::new();
            }
            if st.handed < st.units.len() {
                let from = st.handed;
                st.handed = (from + k).min(st.units.len());
                let block: Vec<Position> = st.units[from..st.handed].to_vec();
                let base = st.base;
                st.by_pos.extend(block.iter().copied());
                return block.into_iter().enumerate().map(|(i, at)| (base + from + i, at)).collect();
            }
            if st.made == st.units.len() {
                let s = &mut *st;
                let outcomes = &s.outcomes;
                let y = |cond: usize, c: usize, t: u32| outcomes.get(&(cond, c, t)).copied();
                s.engine.observe(&y);
                PairedRounds::next_round(s, k, self.start);
                continue;
            }
            st = self.changed.wait_timeout(st, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn label(&self, at: &Position) -> (Option<usize>, Option<u32>) {
        (Some(at.case), Some(at.number))
    }

    fn run(&self, pos: usize, at: Position) -> Placed {
        let out = guarded(&self.plan, at, || run_trial(&self.plan, at));
        self.made(pos, &out);
        self.placed_of(pos, out)
    }

    fn abandoned(&self, pos: usize, overran: Option<Duration>) -> Placed {
        let at = self.state.lock().unwrap_or_else(|p| p.into_inner()).by_pos[pos];
        let why = match overran {
            Some(over) => format!(
                "the trial overran its time limit by more than {} s in code no limit could stop; its worker was abandoned",
                over.as_secs()
            ),
            None => "the worker running the trial stopped unexpectedly".to_string(),
        };
        let out = trial::internal_error(&self.plan, at, why);
        self.made(pos, &out);
        self.placed_of(pos, out)
    }

    fn stop(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.done = true;
        self.changed.notify_all();
    }
}
