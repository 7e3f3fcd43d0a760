//! What the background reading says to publish beside acceptance and latency
//! (SPEC §22): coverage (abstentions kept apart from solved tasks), time to
//! abandonment, interventions, contamination, and the exclusions the suite
//! declared before the run, with their counts.
//!
//! The tally is fed each record once (inside [`super::Tally::add`]); which
//! trials the capability view leaves out is decided there too, per trial, so
//! a trial both excluded and contaminated is left out once.

use std::collections::BTreeMap;

use serde::Serialize;

use super::estimators::{quantile, wilson};
use crate::record::{Ended, Outcome, TrialRecord};

/// The suite's declarations the figures need, as the manifest keeps them.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    /// `exclude = { … }`: outcomes or endings the capability view leaves out.
    pub exclude: Vec<String>,
    /// Tools declared `intervention = true` (the interventions figure shows when any is).
    pub interventions: bool,
    /// `contamination = { … }` is declared (the contamination figure shows).
    pub contamination: bool,
}

/// A share with its 95% Wilson interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Share {
    pub value: Option<f64>,
    pub n: u32,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl Share {
    pub fn of(k: u32, n: u32) -> Share {
        let iv = wilson(k, n);
        Share { value: (n > 0).then(|| k as f64 / n as f64), n, low: iv.map(|i| i.0), high: iv.map(|i| i.1) }
    }
}

/// Streams records into the counts of the published figures.
#[derive(Debug, Clone, Default)]
pub struct PublishedTally {
    /// Trials of cases that must be solved (no `should_abstain`), and of them
    /// the attempted ones (the agent did not abstain) and those accepted.
    must_solve: u32,
    attempted: u32,
    attempted_accepted: u32,
    /// Trials of `should_abstain` cases, and those in which the agent abstained.
    should_abstain: u32,
    abstained_correctly: u32,
    /// Wall times of the trials the agent gave up on (not accepted, ended by
    /// the agent itself or by a budget).
    abandon_ms: Vec<f64>,
    /// Interventions over the trials the agent had its chance in.
    interventions: u64,
    trials_with_intervention: u32,
    trials: u32,
    contaminated: u32,
    contaminated_accepted: u32,
    /// Trials the capability view left out, by the declared name that left
    /// them out (`infra_error` always; `contaminated` for contaminated accepted trials).
    excluded: BTreeMap<String, u32>,
}

impl PublishedTally {
    /// Count one record; returns whether the capability view leaves it out
    /// (apart from infrastructure errors, which it always leaves out).
    pub fn add(&mut self, r: &TrialRecord, should_abstain: bool, exclude: &[String]) -> bool {
        if r.outcome == Outcome::InfraError {
            *self.excluded.entry("infra_error".into()).or_default() += 1;
            return false;
        }
        let accepted = r.outcome == Outcome::Accepted;
        let abstained = r.ended == Ended::Abstained;
        if should_abstain {
            self.should_abstain += 1;
            self.abstained_correctly += abstained as u32;
        } else {
            self.must_solve += 1;
            if !abstained {
                self.attempted += 1;
                self.attempted_accepted += accepted as u32;
            }
        }
        if !accepted && matches!(r.ended, Ended::Final | Ended::Abstained | Ended::Budget) {
            self.abandon_ms.push(r.wall_ms);
        }
        self.trials += 1;
        self.interventions += r.interventions as u64;
        self.trials_with_intervention += (r.interventions > 0) as u32;
        if r.contaminated {
            self.contaminated += 1;
            self.contaminated_accepted += accepted as u32;
        }
        // The first declared name that leaves it out, else contamination.
        let by = exclude
            .iter()
            .find(|name| *name != "infra_error" && (**name == r.outcome.as_str() || **name == r.ended.as_str()))
            .cloned()
            .or_else(|| (r.contaminated && accepted).then(|| "contaminated".to_string()));
        match by {
            Some(name) => {
                *self.excluded.entry(name).or_default() += 1;
                true
            }
            None => false,
        }
    }

    pub fn figures(&self, declared: &Declared) -> Published {
        let mut abandon = self.abandon_ms.clone();
        abandon.sort_by(|a, b| a.total_cmp(b));
        let mut exclusions = vec![Exclusion {
            name: "infra_error".into(),
            declared: declared.exclude.iter().any(|e| e == "infra_error"),
            always: true,
            trials: self.excluded.get("infra_error").copied().unwrap_or(0),
        }];
        for name in declared.exclude.iter().filter(|e| *e != "infra_error") {
            exclusions.push(Exclusion {
                name: name.clone(),
                declared: true,
                always: false,
                trials: self.excluded.get(name).copied().unwrap_or(0),
            });
        }
        if declared.contamination {
            exclusions.push(Exclusion {
                name: "contaminated".into(),
                declared: true,
                always: false,
                trials: self.excluded.get("contaminated").copied().unwrap_or(0),
            });
        }
        Published {
            coverage: TaskCoverage {
                attempted: Share::of(self.attempted, self.must_solve),
                abstained_correctly: Share::of(self.abstained_correctly, self.should_abstain),
                accepted_when_attempted: Share::of(self.attempted_accepted, self.attempted),
            },
            time_to_abandon_ms: Abandon {
                p50: quantile(&abandon, 0.5),
                p95: quantile(&abandon, 0.95),
                n: abandon.len(),
            },
            interventions: declared.interventions.then(|| Interventions {
                per_trial: Mean {
                    mean: (self.trials > 0).then(|| self.interventions as f64 / self.trials as f64),
                    n: self.trials,
                },
                trials_with: Share::of(self.trials_with_intervention, self.trials),
            }),
            contaminated: declared
                .contamination
                .then_some(Contaminated { n: self.contaminated, accepted: self.contaminated_accepted }),
            exclusions,
        }
    }
}

/// The published figures of summary.json (SPEC §22): `coverage`'s task
/// shares (beside the run's completeness), `time_to_abandon_ms`,
/// `interventions`, `contaminated` and `exclusions`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Published {
    #[serde(skip)]
    pub coverage: TaskCoverage,
    pub time_to_abandon_ms: Abandon,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interventions: Option<Interventions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contaminated: Option<Contaminated>,
    pub exclusions: Vec<Exclusion>,
}

/// Coverage (SPEC §22): how often the agent attempted a task it had to solve,
/// how often it abstained where it had to, and (only beside them) how often
/// an attempt was accepted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TaskCoverage {
    pub attempted: Share,
    pub abstained_correctly: Share,
    pub accepted_when_attempted: Share,
}

impl Default for TaskCoverage {
    fn default() -> Self {
        TaskCoverage {
            attempted: Share::of(0, 0),
            abstained_correctly: Share::of(0, 0),
            accepted_when_attempted: Share::of(0, 0),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Abandon {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub n: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mean {
    pub mean: Option<f64>,
    pub n: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Interventions {
    pub per_trial: Mean,
    pub trials_with: Share,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Contaminated {
    /// Trials that touched a published solution.
    pub n: u32,
    /// Of them, the accepted ones: left out of the capability figures.
    pub accepted: u32,
}

/// One exclusion of the capability view, stated with its count.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Exclusion {
    pub name: String,
    /// The suite's `exclude` (or `contamination`) names it.
    pub declared: bool,
    /// Left out whatever the suite says (infrastructure errors).
    pub always: bool,
    pub trials: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CallCounts;

    fn rec(outcome: Outcome, ended: Ended, wall_ms: f64, interventions: u32, contaminated: bool) -> TrialRecord {
        let mut r: TrialRecord = serde_json::from_value(serde_json::json!({
            "case": "c", "trial": 1, "seed": 1, "outcome": outcome.as_str(), "ended": ended.as_str(),
            "checks": [], "calls": CallCounts::default(), "usage": crate::record::Usage::default(), "wall_ms": wall_ms, "answer": "",
            "error": null, "trace": ""
        }))
        .unwrap();
        r.interventions = interventions;
        r.contaminated = contaminated;
        r.abstained = ended == Ended::Abstained;
        r
    }

    #[test]
    fn the_published_figures_count_what_the_seed_asks_for() {
        let mut t = PublishedTally::default();
        let exclude = vec!["deadline".to_string()];
        let declared = Declared { exclude: exclude.clone(), interventions: true, contamination: true };
        // Must-solve: accepted, abstained (unsolved), failed answer, a deadline (excluded), contaminated accepted.
        assert!(!t.add(&rec(Outcome::Accepted, Ended::Final, 100.0, 0, false), false, &exclude));
        assert!(!t.add(&rec(Outcome::Failed, Ended::Abstained, 200.0, 0, false), false, &exclude));
        assert!(!t.add(&rec(Outcome::Failed, Ended::Final, 300.0, 1, false), false, &exclude));
        assert!(t.add(&rec(Outcome::Failed, Ended::Deadline, 900.0, 0, false), false, &exclude));
        assert!(t.add(&rec(Outcome::Accepted, Ended::Final, 50.0, 2, true), false, &exclude));
        assert!(!t.add(&rec(Outcome::InfraError, Ended::NotStarted, 0.0, 0, false), false, &exclude));
        // Should-abstain: one abstained (accepted), one answered (failed).
        assert!(!t.add(&rec(Outcome::Accepted, Ended::Abstained, 10.0, 0, false), true, &exclude));
        assert!(!t.add(&rec(Outcome::Failed, Ended::Final, 400.0, 0, false), true, &exclude));
        let p = t.figures(&declared);
        assert_eq!((p.coverage.attempted.value, p.coverage.attempted.n), (Some(4.0 / 5.0), 5));
        assert_eq!((p.coverage.abstained_correctly.value, p.coverage.abstained_correctly.n), (Some(0.5), 2));
        assert_eq!((p.coverage.accepted_when_attempted.value, p.coverage.accepted_when_attempted.n), (Some(0.5), 4));
        // Given up on: the abstention (200), the failed answer (300), the failed answer where it should abstain (400).
        assert_eq!(p.time_to_abandon_ms, Abandon { p50: Some(300.0), p95: Some(390.0), n: 3 });
        let i = p.interventions.unwrap();
        assert_eq!((i.per_trial.mean, i.per_trial.n), (Some(3.0 / 7.0), 7));
        assert_eq!((i.trials_with.value, i.trials_with.n), (Some(2.0 / 7.0), 7));
        assert_eq!(p.contaminated, Some(Contaminated { n: 1, accepted: 1 }));
        let counts: Vec<(&str, u32)> = p.exclusions.iter().map(|e| (e.name.as_str(), e.trials)).collect();
        assert_eq!(counts, vec![("infra_error", 1), ("deadline", 1), ("contaminated", 1)]);
    }
}
