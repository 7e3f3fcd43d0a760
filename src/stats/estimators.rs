//! The estimators (SPEC §7) and what they need to know of a case.

use serde::{Serialize, Serializer};

/// pass^k = C(c,k)/C(n,k): the chance that k trials drawn without replacement all pass.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// pass@k = 1 − C(n−c,k)/C(n,k): the chance that at least one of k trials passes.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    let f = n - c;
    if f < k {
        return 1.0;
    }
    1.0 - (0..k).map(|i| (f - i) as f64 / (n - i) as f64).product::<f64>()
}

/// The q-quantile (0..1) by linear interpolation between order statistics.
/// Infinite values are kept as they are (never `inf - inf = NaN`).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (sorted[lo], sorted[hi]);
    if a == b || !a.is_finite() || !b.is_finite() {
        return Some(if pos - (lo as f64) < 0.5 { a } else { b });
    }
    Some(a + (b - a) * (pos - lo as f64))
}

/// What the figures need to know about a case, whatever its records say.
#[derive(Debug, Clone)]
pub struct CaseInfo {
    pub id: String,
    pub weight: f64,
    pub tags: Vec<String>,
    pub difficulty: Option<String>,
    /// The case's reference solution, for the efficiency figures.
    pub reference: Option<crate::spec::Reference>,
    /// The case's contract requires abstaining (SPEC §22).
    pub should_abstain: bool,
    /// A drafted case awaiting a person's review (SPEC §23): its trials are
    /// counted apart, in no figure or gate.
    pub pending_review: bool,
}

/// The Wilson score interval (95%) for `k` successes in `n` trials.
pub fn wilson(k: u32, n: u32) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054_f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// A k of pass@k / pass^k. In JSON, the keys of the k-indexed maps ("1", "2", …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct K(pub u32);

impl Serialize for K {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A figure indexed by k: pass@k or pass^k for k = 1, 2, … In JSON, a map
/// `{"1": …, "2": …}`. Kept as a sorted list, not a map: every case has two
/// per view, and a BTreeMap node for a single k took ~200 bytes (2 MB of a
/// 10,000-case grade).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByK(Vec<(K, f64)>);

impl ByK {
    pub fn new() -> ByK {
        ByK(Vec::new())
    }
    pub fn insert(&mut self, k: K, v: f64) {
        match self.0.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => self.0[i].1 = v,
            Err(i) => self.0.insert(i, (k, v)),
        }
    }
    pub fn get(&self, k: &K) -> Option<&f64> {
        self.0.binary_search_by_key(k, |e| e.0).ok().map(|i| &self.0[i].1)
    }
    /// The ks, ascending.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> {
        self.0.iter().map(|e| &e.0)
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &f64)> {
        self.0.iter().map(|e| (&e.0, &e.1))
    }
}

impl std::ops::Index<&K> for ByK {
    type Output = f64;
    fn index(&self, k: &K) -> &f64 {
        self.get(k).expect("no figure for this k")
    }
}

impl Serialize for ByK {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn estimators_match_hand_computed_values() {
        // 2 of 4: pass@2 = 1 - C(2,2)/C(4,2) = 5/6; pass^2 = C(2,2)/C(4,2) = 1/6.
        assert!(close(pass_at_k(4, 2, 2), 5.0 / 6.0));
        assert!(close(pass_hat_k(4, 2, 2), 1.0 / 6.0));
        // 7 of 8: pass^4 = C(7,4)/C(8,4) = 35/70.
        assert!(close(pass_hat_k(8, 7, 4), 0.5));
        assert!(close(pass_hat_k(5, 0, 1), 0.0));
        assert!(close(pass_at_k(5, 5, 3), 1.0));
        assert!(close(pass_at_k(3, 1, 1), 1.0 / 3.0));
        assert!(pass_hat_k(3, 3, 4).is_nan());
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), table I: 81/263 → 0.2553 to 0.3662; 0/10 → 0 to 0.2775.
        let (lo, hi) = wilson(81, 263).unwrap();
        assert!((lo - 0.2553).abs() < 5e-4 && (hi - 0.3662).abs() < 5e-4, "{lo} {hi}");
        let (lo, hi) = wilson(0, 10).unwrap();
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 5e-4, "{lo} {hi}");
        assert_eq!(wilson(3, 0), None);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(quantile(&v, 0.5), Some(25.0));
        assert_eq!(quantile(&v, 0.0), Some(10.0));
        assert_eq!(quantile(&v, 1.0), Some(40.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn quantiles_of_infinities_are_not_nan() {
        let v = [1.0, f64::INFINITY, f64::INFINITY];
        assert_eq!(quantile(&v, 0.975), Some(f64::INFINITY));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
    }
}
