//! Drafted cases awaiting a person's review (SPEC §23): their trials are
//! played and reported apart, and left out of every figure and gate (the
//! tally never counts them; see `Tally::add`).

use serde::Serialize;

use crate::record::{Outcome, TrialRecord};

/// One pending case's trials.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PendingCase {
    pub id: String,
    pub trials: u32,
    pub accepted: u32,
}

/// summary.json's `pending_review`: what the pending cases did, counted nowhere else.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PendingReview {
    /// How many pending cases the run played.
    pub cases: u32,
    pub trials: u32,
    pub accepted: u32,
    /// By case, in the plan's order.
    pub by_case: Vec<PendingCase>,
}

/// The pending cases' trials as records stream in (by case index).
#[derive(Debug, Clone, Default)]
pub struct PendingTally {
    /// Which cases are pending, by index.
    pending: Vec<bool>,
    by_case: Vec<PendingCase>,
}

impl PendingTally {
    pub fn new(flags: Vec<bool>) -> Self {
        PendingTally { pending: flags, by_case: Vec::new() }
    }

    /// Count the record when its case is pending; true then (the caller counts it nowhere else).
    pub fn add(&mut self, case: usize, r: &TrialRecord) -> bool {
        if !self.pending.get(case).copied().unwrap_or(false) {
            return false;
        }
        let at = match self.by_case.iter().position(|c| c.id == r.case) {
            Some(i) => i,
            None => {
                self.by_case.push(PendingCase { id: r.case.clone(), ..Default::default() });
                self.by_case.len() - 1
            }
        };
        let c = &mut self.by_case[at];
        c.trials += 1;
        c.accepted += (r.outcome == Outcome::Accepted) as u32;
        true
    }

    /// summary.json's `pending_review`; None when the run has no pending case.
    pub fn figures(&self, ids: &[&str]) -> Option<PendingReview> {
        let pending: Vec<&str> = ids.iter().zip(&self.pending).filter(|(_, p)| **p).map(|(id, _)| *id).collect();
        if pending.is_empty() {
            return None;
        }
        let by_case: Vec<PendingCase> = pending
            .iter()
            .map(|id| {
                self.by_case
                    .iter()
                    .find(|c| c.id == *id)
                    .cloned()
                    .unwrap_or(PendingCase { id: id.to_string(), ..Default::default() })
            })
            .collect();
        Some(PendingReview {
            cases: by_case.len() as u32,
            trials: by_case.iter().map(|c| c.trials).sum(),
            accepted: by_case.iter().map(|c| c.accepted).sum(),
            by_case,
        })
    }
}
