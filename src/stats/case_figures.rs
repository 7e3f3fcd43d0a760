//! A case's row of figures: its tally as pass@k and pass^k for every k its
//! trials allow, in the capability or the operational view (SPEC §7, §22).

use std::collections::BTreeMap;

use serde::Serialize;

use super::efficiency::CaseEfficiency;
use super::estimators::{ByK, CaseInfo, K};
use super::tally::CaseTally;
use crate::record::Outcome;

/// A per-case row of summary.json (SPEC §8 keys).
#[derive(Debug, Clone, Serialize)]
pub struct CaseFigures {
    pub id: String,
    pub n: u32,
    pub accepted: u32,
    pub weight: f64,
    pub outcomes: BTreeMap<Outcome, u32>,
    pub pass_at_k: ByK,
    pub pass_hat_k: ByK,
    pub cost_usd: f64,
    /// Tool calls and tokens against the case's reference solution, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<CaseEfficiency>,
}

pub(super) fn case_figures(info: &CaseInfo, t: &CaseTally, operational: bool) -> CaseFigures {
    let infra = t.count(Outcome::InfraError);
    // The capability view leaves out infrastructure errors and what the suite excluded (SPEC §22).
    let (n, c) = if operational {
        (t.total(), t.count(Outcome::Accepted))
    } else {
        (t.total() - infra - t.excluded, t.count(Outcome::Accepted) - t.excluded_accepted)
    };
    // The same estimators as pass_at_k / pass_hat_k, by recurrence over k (O(n), not O(n²)).
    let mut pass_at = ByK::new();
    let mut pass_hat = ByK::new();
    let (mut all_pass, mut all_fail) = (1.0f64, 1.0f64);
    for k in 1..=n {
        let i = k - 1;
        all_pass *= if c > i { (c - i) as f64 / (n - i) as f64 } else { 0.0 };
        all_fail *= if n - c > i { (n - c - i) as f64 / (n - i) as f64 } else { 0.0 };
        pass_at.insert(K(k), 1.0 - all_fail);
        pass_hat.insert(K(k), all_pass);
    }
    CaseFigures {
        id: info.id.clone(),
        n,
        accepted: c,
        weight: info.weight,
        outcomes: Outcome::ALL.iter().map(|o| (*o, t.count(*o))).collect(),
        pass_at_k: pass_at,
        pass_hat_k: pass_hat,
        cost_usd: t.cost_usd,
        efficiency: None,
    }
}

impl CaseFigures {
    /// Trials of this case with outcome `o`.
    pub fn count(&self, o: Outcome) -> u32 {
        self.outcomes.get(&o).copied().unwrap_or(0)
    }
    pub fn pass_hat(&self, k: u32) -> Option<f64> {
        self.pass_hat_k.get(&K(k)).copied()
    }
    pub fn pass_at(&self, k: u32) -> Option<f64> {
        self.pass_at_k.get(&K(k)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::estimators::{pass_at_k, pass_hat_k};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn case_recurrence_matches_the_closed_forms() {
        let info = CaseInfo {
            id: "x".into(),
            weight: 1.0,
            tags: vec![],
            difficulty: None,
            reference: None,
            should_abstain: false,
            pending_review: false,
        };
        let mut t = CaseTally::default();
        t.outcomes.insert(Outcome::Accepted, 6);
        t.outcomes.insert(Outcome::Failed, 3);
        let cf = case_figures(&info, &t, false);
        for k in 1..=9u32 {
            assert!(close(cf.pass_hat_k[&K(k)], pass_hat_k(9, 6, k)), "pass^{k}");
            assert!(close(cf.pass_at_k[&K(k)], pass_at_k(9, 6, k)), "pass@{k}");
        }
    }
}
