//! How many cases and trials per case detect a difference in pass^1 (SPEC
//! §20, `evalua plan`): a two-sided test at 5% comparing two runs of the same
//! cases, paired by case, with the difference assumed the same on every case
//! (a shift). Paired by case, the cases' own spread cancels; what is left is
//! the trials' noise: Var(d̂) = 2 · v̄ / (K · n), where v̄ is the mean over
//! cases of p(1 − p). The test detects D with power P when
//! D ≥ (z₀.₉₇₅ + z_P) · √(2 v̄ / (K n)), so K · n ≥ 2 v̄ (z₀.₉₇₅ + z_P)² / D².

use serde::Serialize;

/// z for a two-sided 5% test.
pub const Z_ALPHA: f64 = 1.959_963_984_540_054;

/// The standard normal quantile (Acklam's rational approximation, relative
/// error below 1.2e-9; enough for a sample size).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383577518672690e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A plan: the trials (cases × trials per case) that detect `detect` with `power`.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub detect: f64,
    pub power: f64,
    /// The mean over cases of p(1 − p), and where the rates came from.
    pub mean_variance: f64,
    /// K · n needed: total trials per run.
    pub trials_needed: u64,
    /// With the suite's cases: the trials per case needed.
    pub cases: usize,
    pub trials_per_case: u64,
    /// Other shapes: (trials per case, cases needed).
    pub options: Vec<(u64, u64)>,
}

/// The plan for per-case rates `rates` (the suite's cases).
pub fn plan(rates: &[f64], detect: f64, power: f64) -> Plan {
    let k = rates.len().max(1);
    let v = rates.iter().map(|p| p * (1.0 - p)).sum::<f64>() / k as f64;
    // A case that always passes or always fails still has noise in another run.
    let v = v.max(0.01);
    let z = Z_ALPHA + normal_quantile(power);
    let needed = (2.0 * v * z * z / (detect * detect)).ceil() as u64;
    let per_case = needed.div_ceil(k as u64).max(1);
    let options = [1u64, 2, 3, 5, 10].iter().map(|&n| (n, needed.div_ceil(n).max(1))).collect();
    Plan { detect, power, mean_variance: v, trials_needed: needed, cases: k, trials_per_case: per_case, options }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_tables() {
        assert!((normal_quantile(0.8) - 0.841_621_2).abs() < 1e-6);
        assert!((normal_quantile(0.975) - Z_ALPHA).abs() < 1e-6);
        assert!((normal_quantile(0.05) + 1.644_853_6).abs() < 1e-6);
    }

    /// By hand: rates 0.5 and 0.9 → v̄ = (0.25 + 0.09) / 2 = 0.17; power 0.8 →
    /// z = 1.959964 + 0.841621 = 2.801585, z² = 7.848879; D = 0.1 →
    /// K·n ≥ 2 · 0.17 · 7.848879 / 0.01 = 266.86 → 267 trials; 2 cases → 134 each.
    #[test]
    fn the_plan_matches_a_hand_calculation() {
        let p = plan(&[0.5, 0.9], 0.1, 0.8);
        assert!((p.mean_variance - 0.17).abs() < 1e-12);
        assert_eq!(p.trials_needed, 267);
        assert_eq!((p.cases, p.trials_per_case), (2, 134));
        assert_eq!(p.options[0], (1, 267));
        assert_eq!(p.options[3], (5, 54));
    }
}
