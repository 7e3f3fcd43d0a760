//! Gates: thresholds declared in the suite before the run; any failed gate
//! makes the exit code 1.
//!
//! `gate = { ["pass^3"] = 0.8, critical_failures = 0, accepted = { min = 0.7, on = "lower" } }`
//! Rates and pass figures are minimums; counts, cost and latency are maximums.
//! `on = "lower"` / `"upper"` checks the 95% interval's bound instead of the point.
//!
//! With named agents (SPEC §14) a gate may name one (`["pass^3@B"] = 0.6`: agent
//! B's figure) or a difference between two that ran in one interleaved run
//! (`["delta pass^1 B-A"] = 0`: B's figure minus A's, paired case by case, at
//! least 0; a maximum figure's difference at most the threshold). A plain gate
//! applies to every agent of the run.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value as Json;

/// A figure a gate can be declared on (and the key of its interval in
/// summary.json: `"pass^3"`, `"accepted"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    PassHat(u32),
    PassAt(u32),
    Accepted,
    CriticalFailures,
    GraderErrors,
    InfraErrors,
    SkippedChecks,
    CostPerAccepted,
    P50Ms,
    P95Ms,
    /// `judge_kappa`: the agreement of the suite's judges with human labels
    /// (a calibration gate: decided by `calibrate --recheck`, and in a run
    /// from the judges' current calibration records).
    JudgeKappa,
    /// `user_nonadherence`: the share of trials with a simulated user whose
    /// user was not adherent (SPEC §18).
    UserNonadherence,
    /// `recovery @NAME`: of a perturbation's pairs whose baseline trial was
    /// accepted, the share whose perturbed twin was (SPEC §17).
    Recovery,
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::PassHat(k) => write!(f, "pass^{k}"),
            Metric::PassAt(k) => write!(f, "pass@{k}"),
            Metric::Accepted => f.write_str("accepted"),
            Metric::CriticalFailures => f.write_str("critical_failures"),
            Metric::GraderErrors => f.write_str("grader_errors"),
            Metric::InfraErrors => f.write_str("infra_errors"),
            Metric::SkippedChecks => f.write_str("skipped_checks"),
            Metric::CostPerAccepted => f.write_str("cost_per_accepted_usd"),
            Metric::P50Ms => f.write_str("p50_ms"),
            Metric::P95Ms => f.write_str("p95_ms"),
            Metric::JudgeKappa => f.write_str("judge_kappa"),
            Metric::UserNonadherence => f.write_str("user_nonadherence"),
            Metric::Recovery => f.write_str("recovery"),
        }
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Metric {
    /// Higher is better (a minimum) or lower is better (a maximum).
    pub fn is_minimum(self) -> bool {
        matches!(
            self,
            Metric::PassHat(_) | Metric::PassAt(_) | Metric::Accepted | Metric::JudgeKappa | Metric::Recovery
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum On {
    Point,
    Lower,
    Upper,
}

/// Whose figure a gate judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every agent of the run (a single-agent run: its agent).
    Run,
    /// `METRIC@NAME`: the named agent's figure.
    Agent(String),
    /// `delta METRIC CAND-BASE`: the candidate's figure minus the base's,
    /// paired case by case. `pair` is as written (`B-A`): names may hold
    /// `-`, so it is split against the agents' names ([`Scope::delta_pair`]).
    Delta { pair: String },
    /// `drop pass^1 @NAME`: the baseline's pass^1 minus perturbation NAME's,
    /// in a run of perturbations (SPEC §17); at most the threshold.
    Drop(String),
    /// `recovery @NAME`: perturbation NAME's recovery (SPEC §17).
    Perturbation(String),
}

impl Scope {
    /// Split a delta's `CAND-BASE` into two of `agents` (the first split
    /// whose both sides are agents' names).
    pub fn delta_pair<'a>(pair: &'a str, agents: &[&str]) -> Option<(&'a str, &'a str)> {
        pair.match_indices('-')
            .map(|(i, _)| (&pair[..i], &pair[i + 1..]))
            .find(|(c, b)| agents.contains(c) && agents.contains(b) && c != b)
    }

    /// The agents' names a gate mentions, as written (a delta's pair whole).
    pub fn mentions(&self) -> Vec<&str> {
        match self {
            Scope::Run => Vec::new(),
            Scope::Agent(a) => vec![a.as_str()],
            Scope::Delta { pair } => vec![pair.as_str()],
            Scope::Drop(p) | Scope::Perturbation(p) => vec![p.as_str()],
        }
    }

    /// The perturbation a robustness gate names.
    pub fn perturbation(&self) -> Option<&str> {
        match self {
            Scope::Drop(p) | Scope::Perturbation(p) => Some(p),
            _ => None,
        }
    }
}

impl Gate {
    /// Whether the gate's figure must be at least its threshold (else at most).
    pub fn is_minimum(&self) -> bool {
        !matches!(self.scope, Scope::Drop(_)) && self.metric.is_minimum()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub name: String,
    pub metric: Metric,
    pub threshold: f64,
    pub on: On,
    pub scope: Scope,
}

pub const KNOWN: &str = "pass^K, pass@K, accepted, critical_failures, grader_errors, infra_errors, skipped_checks, cost_per_accepted_usd, p50_ms, p95_ms, judge_kappa, user_nonadherence; each also as FIGURE@AGENT or delta FIGURE CAND-BASE; drop pass^1 @PERTURBATION, recovery @PERTURBATION";

/// A gate's figure and whose it is, from its name: `pass^3`, `pass^3@B`,
/// `delta pass^1 B-A`.
pub fn scoped(name: &str) -> Result<(Metric, Scope), String> {
    // Robustness (SPEC §17): `drop pass^1 @NAME`, `recovery @NAME`.
    let perturbation = |rest: &str, like: &str| -> Result<String, String> {
        let p = rest.trim().strip_prefix('@').map(str::trim).unwrap_or("");
        if p.is_empty() || p.contains(' ') {
            return Err(format!("'{name}': a robustness gate names a perturbation, like \"{like}\""));
        }
        Ok(p.to_string())
    };
    if let Some(rest) = name.strip_prefix("drop ") {
        let rest = rest.trim();
        let Some(after) = rest.strip_prefix("pass^1") else {
            return Err(format!("'{name}': a drop gate reads `drop pass^1 @PERTURBATION`"));
        };
        return Ok((Metric::PassHat(1), Scope::Drop(perturbation(after, "drop pass^1 @no_lookup")?)));
    }
    if let Some(rest) = name.strip_prefix("recovery") {
        return Ok((Metric::Recovery, Scope::Perturbation(perturbation(rest, "recovery @no_lookup")?)));
    }
    if let Some(rest) = name.strip_prefix("delta ") {
        let (m, pair) = rest.trim().split_once(' ').ok_or_else(|| {
            format!("'{name}': a difference gate reads `delta FIGURE CANDIDATE-BASE`, like \"delta pass^1 B-A\"")
        })?;
        let pair = pair.trim();
        if !pair.contains('-') || pair.starts_with('-') || pair.ends_with('-') || pair.contains(' ') {
            return Err(format!(
                "'{name}': a difference gate names two agents, CANDIDATE-BASE, like \"delta pass^1 B-A\""
            ));
        }
        return Ok((metric(m)?, Scope::Delta { pair: pair.to_string() }));
    }
    match metric(name) {
        Ok(m) => Ok((m, Scope::Run)),
        Err(plain) => match name.rsplit_once('@') {
            Some((m, agent)) if !agent.is_empty() && metric(m).is_ok() => {
                Ok((metric(m)?, Scope::Agent(agent.to_string())))
            }
            _ => Err(plain),
        },
    }
}

/// A gate's figure from its name (`"pass^3"`, `"critical_failures"`, …).
pub fn metric(name: &str) -> Result<Metric, String> {
    let k = |rest: &str| -> Result<u32, String> {
        rest.parse::<u32>().ok().filter(|k| *k >= 1).ok_or_else(|| format!("'{name}': k must be a positive integer"))
    };
    Ok(match name {
        "accepted" => Metric::Accepted,
        "critical_failures" => Metric::CriticalFailures,
        "grader_errors" => Metric::GraderErrors,
        "infra_errors" => Metric::InfraErrors,
        "skipped_checks" => Metric::SkippedChecks,
        "cost_per_accepted_usd" => Metric::CostPerAccepted,
        "p50_ms" => Metric::P50Ms,
        "p95_ms" => Metric::P95Ms,
        "judge_kappa" => Metric::JudgeKappa,
        "user_nonadherence" => Metric::UserNonadherence,
        _ => {
            if let Some(rest) = name.strip_prefix("pass^") {
                Metric::PassHat(k(rest)?)
            } else if let Some(rest) = name.strip_prefix("pass@") {
                Metric::PassAt(k(rest)?)
            } else {
                return Err(format!("unknown gate '{name}' (known: {KNOWN})"));
            }
        }
    })
}

/// `gate = { … }` as a suite field: its table, read as JSON, then [`parse`]d.
pub fn read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Gate>, D::Error> {
    parse(&Json::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// An optional `gate = { … }` ([`read`]).
pub fn read_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<Gate>>, D::Error> {
    match Option::<Json>::deserialize(d)? {
        None => Ok(None),
        Some(j) => parse(&j).map(Some).map_err(serde::de::Error::custom),
    }
}

/// Parse the suite's `gate` table (as JSON). Errors name the offending gate.
pub fn parse(gate: &Json) -> Result<Vec<Gate>, String> {
    let map = match gate {
        Json::Object(m) => m,
        Json::Array(a) if a.is_empty() => return Ok(Vec::new()),
        _ => return Err("'gate' must be a table of name = threshold".into()),
    };
    let mut gates = Vec::new();
    for (name, v) in map {
        let (metric, scope) = scoped(name)?;
        let delta = matches!(scope, Scope::Delta { .. } | Scope::Drop(_));
        let minimum = !matches!(scope, Scope::Drop(_)) && metric.is_minimum();
        let (threshold, on) = match v {
            Json::Number(n) => (n.as_f64().unwrap_or(f64::NAN), On::Point),
            Json::Object(o) => {
                for k in o.keys() {
                    if !["min", "max", "on"].contains(&k.as_str()) {
                        return Err(format!("'{name}': unknown key '{k}' (use min or max, and on)"));
                    }
                }
                let t = if minimum { o.get("min") } else { o.get("max") };
                let wrong = if minimum { o.get("max") } else { o.get("min") };
                if wrong.is_some() {
                    let want = if minimum { "min" } else { "max" };
                    return Err(format!(
                        "'{name}' is a {} threshold: use {want} =",
                        if minimum { "minimum" } else { "maximum" },
                        want = want
                    ));
                }
                let t = t
                    .and_then(|t| t.as_f64())
                    .ok_or_else(|| format!("'{name}': give {} = a number", if minimum { "min" } else { "max" }))?;
                let on = match o.get("on").and_then(|v| v.as_str()) {
                    None | Some("point") => On::Point,
                    Some("lower") => On::Lower,
                    Some("upper") => On::Upper,
                    Some(other) => {
                        return Err(format!("'{name}': on must be \"point\", \"lower\" or \"upper\", got {other:?}"));
                    }
                };
                (t, on)
            }
            _ => {
                return Err(format!("'{name}': the threshold must be a number or {{ min|max = n, on = ... }}"));
            }
        };
        if delta {
            // A difference may be required to be at least a loss (a negative threshold).
            if !threshold.is_finite() {
                return Err(format!("'{name}': the threshold must be a finite number"));
            }
            if (metric.is_minimum() || matches!(scope, Scope::Drop(_))) && !(-1.0..=1.0).contains(&threshold) {
                return Err(format!("'{name}': a difference of rates is between -1 and 1, got {threshold}"));
            }
        } else {
            if !threshold.is_finite() || threshold < 0.0 {
                return Err(format!("'{name}': the threshold must be a non-negative number"));
            }
            if metric.is_minimum() && threshold > 1.0 {
                return Err(format!("'{name}': a rate threshold is between 0 and 1, got {threshold}"));
            }
        }
        gates.push(Gate { name: name.clone(), metric, threshold, on, scope });
    }
    gates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(gates)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    pub name: String,
    pub threshold: f64,
    /// The figure the gate was checked on (point or interval bound); null when undefined.
    pub value: Option<f64>,
    pub on: On,
    pub passed: bool,
    pub note: Option<String>,
    /// The figure has no value for this input, and the gate was not decided:
    /// graded traces, one trial each, have no pass^2 (see `RunData::refigure`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undefined: bool,
}

/// Decide one gate given the figure's point value and interval.
pub fn decide(g: &Gate, point: Option<f64>, interval: Option<(f64, f64)>) -> Verdict {
    let value = match g.on {
        On::Point => point,
        On::Lower => interval.map(|i| i.0),
        On::Upper => interval.map(|i| i.1),
    };
    let (passed, note) = match value {
        None if g.metric == Metric::JudgeKappa => (
            false,
            Some(
                "no reachable judge has a calibration record with a kappa for its model and prompt \
                 (evalua calibrate SUITE --labels STORE)"
                    .to_string(),
            ),
        ),
        None => (
            false,
            Some("the figure is undefined for this run (e.g. k larger than the trials of some case)".to_string()),
        ),
        Some(v) if v.is_nan() => (false, Some("the figure is undefined".to_string())),
        Some(v) => (if g.is_minimum() { v >= g.threshold } else { v <= g.threshold }, None),
    };
    Verdict { name: g.name.clone(), threshold: g.threshold, value, on: g.on, passed, note, undefined: false }
}

/// Rebuild a gate from its manifest entry (`{ name, threshold, on }`).
pub fn from_manifest(name: &str, threshold: f64, on: On) -> Result<Gate, String> {
    // A gate added by a flag carries it in parentheses: "skipped_checks (--require-judge)".
    let metric_name = name.split(" (").next().unwrap_or(name);
    let (metric, scope) = scoped(metric_name)?;
    Ok(Gate { name: name.to_string(), metric, threshold, on, scope })
}

/// `--require-judge`: a gate `skipped_checks = 0` added to the suite's own.
pub fn require_judge() -> Gate {
    Gate {
        name: "skipped_checks (--require-judge)".into(),
        metric: Metric::SkippedChecks,
        threshold: 0.0,
        on: On::Point,
        scope: Scope::Run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate_passes(g: &Gate, v: f64) -> bool {
        decide(g, Some(v), None).passed
    }

    #[test]
    fn gates_name_an_agent_or_a_difference() {
        assert_eq!(scoped("pass^3").unwrap(), (Metric::PassHat(3), Scope::Run));
        assert_eq!(scoped("pass@3").unwrap(), (Metric::PassAt(3), Scope::Run));
        assert_eq!(scoped("pass^3@B").unwrap(), (Metric::PassHat(3), Scope::Agent("B".into())));
        assert_eq!(scoped("pass@2@with-memory").unwrap(), (Metric::PassAt(2), Scope::Agent("with-memory".into())));
        assert_eq!(scoped("accepted@B").unwrap(), (Metric::Accepted, Scope::Agent("B".into())));
        assert_eq!(scoped("drop pass^1 @no_lookup").unwrap(), (Metric::PassHat(1), Scope::Drop("no_lookup".into())));
        assert_eq!(scoped("recovery @r429").unwrap(), (Metric::Recovery, Scope::Perturbation("r429".into())));
        assert!(scoped("drop pass^2 @x").unwrap_err().contains("drop pass^1 @PERTURBATION"));
        assert!(scoped("recovery").unwrap_err().contains("names a perturbation"));
        let g = parse(&serde_json::json!({ "drop pass^1 @x": 0.2, "recovery @x": 0.9 })).unwrap();
        assert!(!g[0].is_minimum() && g[1].is_minimum(), "{g:?}");
        assert!(!gate_passes(&g[0], 0.3) && gate_passes(&g[0], -0.1) && gate_passes(&g[1], 0.95));
        assert_eq!(scoped("delta pass^1 B-A").unwrap(), (Metric::PassHat(1), Scope::Delta { pair: "B-A".into() }));
        assert!(scoped("pass^x@B").is_err());
        assert!(scoped("bogus@B").unwrap_err().contains("unknown gate 'bogus@B'"));
        assert!(scoped("delta pass^1").unwrap_err().contains("CANDIDATE-BASE"));
        assert!(scoped("delta pass^1 B").unwrap_err().contains("two agents"));
        // Names with '-' split where both sides are agents.
        let agents = ["no-memory", "full", "no"];
        assert_eq!(Scope::delta_pair("full-no-memory", &agents), Some(("full", "no-memory")));
        assert_eq!(Scope::delta_pair("no-memory-full", &agents), Some(("no-memory", "full")));
        assert_eq!(Scope::delta_pair("full-full", &agents), None);
        assert_eq!(Scope::delta_pair("x-full", &agents), None);
    }

    #[test]
    fn a_difference_may_be_negative_within_its_range() {
        let g = parse(&serde_json::json!({ "delta pass^1 B-A": -0.05, "delta p95_ms B-A": -200 })).unwrap();
        assert_eq!(g.len(), 2);
        assert!(parse(&serde_json::json!({ "delta pass^1 B-A": -1.5 })).unwrap_err().contains("between -1 and 1"));
        assert!(parse(&serde_json::json!({ "pass^1@B": -0.1 })).unwrap_err().contains("non-negative"));
    }
}
