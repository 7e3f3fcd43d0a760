//! Who is to blame for the trials not accepted, and the headline figures
//! without the simulated user's failures (SPEC §18). The raw figures stay the
//! headline; these are shown beside them, never instead.

use serde::Serialize;

use super::estimators::{ByK, K, pass_at_k, pass_hat_k};
use super::published::Share;
use crate::record::{Outcome, TrialRecord};

/// The causes, in the order they are decided.
pub const CAUSES: [&str; 4] = ["infra", "grader", "user", "agent"];

/// Streams records into blame counts and the simulated users' conduct.
#[derive(Debug, Clone, Default)]
pub struct BlameTally {
    /// Trials not accepted, and of them those blamed on each cause (CAUSES' order).
    not_accepted: u32,
    by: [u32; 4],
    /// Trials with a `user` record, and those whose user was not adherent.
    user_trials: u32,
    nonadherent: u32,
    /// What the evaluation's own model calls (simulated users, judges) cost.
    pub evaluation_cost_usd: f64,
}

impl BlameTally {
    /// Count one record; returns whether it is blamed on the simulated user.
    pub fn add(&mut self, r: &TrialRecord) -> bool {
        self.evaluation_cost_usd += r.evaluation_cost_usd;
        if let Some(u) = &r.user {
            self.user_trials += 1;
            self.nonadherent += (u.adherent == Some(false)) as u32;
        }
        if r.outcome == Outcome::Accepted {
            return false;
        }
        self.not_accepted += 1;
        let by = r.blame.as_ref().map(|b| b.by.as_str()).unwrap_or(if r.outcome == Outcome::InfraError {
            "infra"
        } else if r.outcome == Outcome::GraderError {
            "grader"
        } else {
            "agent"
        });
        let i = CAUSES.iter().position(|c| *c == by).unwrap_or(3);
        self.by[i] += 1;
        i == 2
    }

    pub fn figures(&self) -> BlameFigures {
        let share = |i: usize| Share::of(self.by[i], self.not_accepted);
        BlameFigures { infra: share(0), grader: share(1), user: share(2), agent: share(3) }
    }

    /// The share of trials with a simulated user whose user was not adherent
    /// (the `user_nonadherence` gate); None without such trials.
    pub fn nonadherence(&self) -> Option<Share> {
        (self.user_trials > 0).then(|| Share::of(self.nonadherent, self.user_trials))
    }

    pub fn user_trials(&self) -> u32 {
        self.user_trials
    }

    pub fn blamed_on_user(&self) -> u32 {
        self.by[2]
    }
}

/// summary.json `blame`: each cause's share of the trials not accepted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BlameFigures {
    pub agent: Share,
    pub user: Share,
    pub grader: Share,
    pub infra: Share,
}

/// summary.json `without_user_failures`: the headline figures with the trials
/// blamed on the simulated user left out, and how many were left out.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WithoutUser {
    pub pass_hat_k: ByK,
    pub pass_at_k: ByK,
    pub accepted_rate: Option<f64>,
    pub left_out: u32,
}

/// The capability figures over `cases` ((weight, counted trials, accepted),
/// the user-blamed trials already taken out), weighted as the headline's.
pub fn without_user(cases: &[(f64, u32, u32)], left_out: u32) -> WithoutUser {
    let counted: Vec<&(f64, u32, u32)> = cases.iter().filter(|c| c.1 > 0).collect();
    let kmax = counted.iter().map(|c| c.1).min().unwrap_or(0);
    let weight: f64 = counted.iter().map(|c| c.0).sum();
    let mean = |f: &dyn Fn(u32, u32) -> f64| -> Option<f64> {
        (weight > 0.0).then(|| counted.iter().map(|c| c.0 * f(c.1, c.2)).sum::<f64>() / weight)
    };
    let (mut hat, mut at) = (ByK::new(), ByK::new());
    for k in 1..=kmax {
        if let Some(v) = mean(&|n, c| pass_hat_k(n, c, k)) {
            hat.insert(K(k), v);
        }
        if let Some(v) = mean(&|n, c| pass_at_k(n, c, k)) {
            at.insert(K(k), v);
        }
    }
    WithoutUser { pass_hat_k: hat, pass_at_k: at, accepted_rate: mean(&|n, c| c as f64 / n as f64), left_out }
}
