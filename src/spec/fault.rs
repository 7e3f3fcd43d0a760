//! Faults injected on purpose (SPEC §11): per tool, on the Nth call or with a
//! seeded probability, declared suite-wide (`evalua.suite { faults = … }`) or
//! per case (`suite:case { faults = … }`, which replaces the suite's rules for
//! the tools it names, or turns them off with `tool = false`).
//!
//! This is the declaration only; the executor decides when a rule fires and
//! what it does (`executor::fault`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a fault does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The handler does not run; the agent gets an error.
    Error,
    /// The handler does not run; the agent gets a 429 with `retry_after_s`.
    RateLimit,
    /// The agent is told the call timed out. The handler does not run, or,
    /// with `effect = "applied"`, runs (its effect happens) and its result is
    /// withheld: an uncertain effect (SPEC §13).
    Timeout,
    /// The handler runs; its result is emptied (lists become empty).
    Empty,
    /// The handler runs; only part of its result reaches the agent.
    Partial,
    /// The handler runs; the dates and datetimes in its result move into the past.
    Stale,
    /// The handler runs; attacker text is planted in its result (SPEC §13).
    Inject,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Error => "error",
            FaultKind::RateLimit => "rate_limit",
            FaultKind::Timeout => "timeout",
            FaultKind::Empty => "empty",
            FaultKind::Partial => "partial",
            FaultKind::Stale => "stale",
            FaultKind::Inject => "inject",
        }
    }
}

/// One rule: when it fires and what it does. Which keys a kind takes is
/// checked by the DSL (stdlib/evalua/init.lua) when the suite loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRule {
    pub kind: FaultKind,
    /// Fire on these calls of the tool (1-based, counting the calls that pass
    /// validation and policy). With neither this nor `probability`: every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<Vec<u32>>,
    /// Fire on each call with this probability, drawn from the trial's seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// `rate_limit`: the wait the agent is told to respect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// `error`, `rate_limit`, `timeout`: the error text the agent gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `partial`: the share of the result kept (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<f64>,
    /// `stale`: how far into the past dates move, in seconds (default one day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_s: Option<f64>,
    /// `timeout`: whether the call's effect happens before the agent is told
    /// it timed out (default: it does not; the handler does not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<FaultEffect>,
    /// `inject`: the attacker's text planted in the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `inject`: where in the result, as a path of keys and 1-based indexes
    /// (`entries.2.message`); the text is appended to the string there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// Whether a `timeout`'s call has its effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultEffect {
    /// The handler does not run (the default).
    None,
    /// The handler runs; the agent is told the call timed out all the same.
    Applied,
}

/// Fault rules by tool name; `None` turns a suite-wide rule off for a case.
pub type Faults = BTreeMap<String, Option<Vec<FaultRule>>>;

/// The rules that apply in a case: the suite's, with the case's replacing
/// them tool by tool.
pub fn effective(suite: &Faults, case: Option<&Faults>) -> BTreeMap<String, Vec<FaultRule>> {
    let mut out: BTreeMap<String, Vec<FaultRule>> = BTreeMap::new();
    for (tool, rules) in suite.iter().chain(case.into_iter().flatten()) {
        match rules {
            Some(r) if !r.is_empty() => {
                out.insert(tool.clone(), r.clone());
            }
            _ => {
                out.remove(tool);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: FaultKind) -> FaultRule {
        FaultRule {
            kind,
            on_call: Some(vec![1]),
            probability: None,
            retry_after_s: None,
            message: None,
            keep: None,
            age_s: None,
            effect: None,
            text: None,
            field: None,
        }
    }

    #[test]
    fn a_case_replaces_or_removes_the_suite_rules_tool_by_tool() {
        let suite: Faults = [
            ("a".to_string(), Some(vec![rule(FaultKind::Error)])),
            ("b".to_string(), Some(vec![rule(FaultKind::Empty)])),
        ]
        .into();
        let case: Faults = [("a".to_string(), Some(vec![rule(FaultKind::Timeout)])), ("b".to_string(), None)].into();
        let e = effective(&suite, Some(&case));
        assert_eq!(e.len(), 1);
        assert_eq!(e["a"][0].kind, FaultKind::Timeout);
        assert_eq!(effective(&suite, None).len(), 2);
    }
}
