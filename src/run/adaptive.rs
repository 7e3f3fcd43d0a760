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

use super::scheduler::{Kept, Placed, Source, Start, run_trial, trace_bytes};
use crate::error::{Error, Result};
use crate::record::manifest::AdaptiveDesign;
use crate::stats::adaptive::{Design, Engine, outcome_value, seq_gates};
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
    let min = plan
        .cases
        .iter()
        .map(|c| {
            let own = if trials_flag.is_some() { None } else { c.spec.trials_min };
            own.or(suite.trials_min).unwrap_or(DEFAULT_MIN).min(c.trials)
        })
        .collect();
    let undecided = if suite.undecided_passes { "pass" } else { "fail" }.to_string();
    Ok(Some(AdaptiveDesign { min, undecided }))
}

/// The engine for a plan's design.
fn engine(plan: &Plan, d: &AdaptiveDesign) -> Engine {
    let weights: Vec<f64> = plan.cases.iter().map(|c| c.spec.weight).collect();
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
                    st.next_index += 1;
                }
            }
        }
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
        let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_trial(&self.plan, at))) {
            Ok(o) => o,
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                trial::internal_error(&self.plan, at, msg.unwrap_or_else(|| "panic".into()))
            }
        };
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
