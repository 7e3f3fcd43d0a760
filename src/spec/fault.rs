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

/// `rate_limit`'s wait when its rule gives no `retry_after_s`.
pub const DEFAULT_RETRY_AFTER_S: f64 = 1.0;

impl FaultKind {
    /// Every kind. The DSL's check of a rule's keys (`FAULT_KINDS` in
    /// stdlib/evalua/init.lua) is built from this and [`FaultKind::keys`]
    /// (`host.fault_kinds`): a new kind is declared here, once.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Error,
        FaultKind::RateLimit,
        FaultKind::Timeout,
        FaultKind::Empty,
        FaultKind::Partial,
        FaultKind::Stale,
        FaultKind::Inject,
    ];

    /// The keys of [`FaultRule`] a rule of this kind takes besides `kind`,
    /// `on_call` and `probability`.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            FaultKind::Error => &["message"],
            FaultKind::RateLimit => &["retry_after_s", "message"],
            FaultKind::Timeout => &["message", "effect"],
            FaultKind::Empty => &[],
            FaultKind::Partial => &["keep"],
            FaultKind::Stale => &["age_s"],
            FaultKind::Inject => &["text", "field"],
        }
    }

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

impl FaultRule {
    /// The rule with its kind's defaults filled in (`rate_limit`'s
    /// `retry_after_s`): the one place they are set, when a suite is read.
    pub fn with_defaults(mut self) -> FaultRule {
        if self.kind == FaultKind::RateLimit && self.retry_after_s.is_none() {
            self.retry_after_s = Some(DEFAULT_RETRY_AFTER_S);
        }
        self
    }
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

/// `faults = { tool = { rule, … } | false }` as the DSL normalised it: each
/// rule with its kind's defaults ([`FaultRule::with_defaults`]).
pub fn read_faults<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Faults>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Rules {
        Off(bool),
        On(Vec<FaultRule>),
    }
    let Some(by_tool) = Option::<BTreeMap<String, Rules>>::deserialize(d)? else { return Ok(None) };
    let mut out = Faults::new();
    for (tool, rules) in by_tool {
        let rules = match rules {
            Rules::Off(false) => None,
            Rules::Off(true) => {
                return Err(serde::de::Error::custom(format_args!(
                    "{tool}: true is not a fault (false turns them off)"
                )));
            }
            Rules::On(rules) => Some(rules.into_iter().map(FaultRule::with_defaults).collect()),
        };
        out.insert(tool, rules);
    }
    Ok(Some(out))
}

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
    fn every_key_a_kind_takes_is_a_field_of_a_rule_and_every_field_is_taken() {
        let fields = crate::spec::keys::fields::<FaultRule>();
        let mut taken = vec!["kind", "on_call", "probability"];
        for kind in FaultKind::ALL {
            for k in kind.keys() {
                assert!(fields.contains(k), "{}: '{k}' is not a field of FaultRule", kind.as_str());
                taken.push(k);
            }
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for f in fields {
            assert!(taken.contains(f), "FaultRule's '{f}' is taken by no kind");
        }
    }

    #[test]
    fn a_rate_limit_waits_one_second_unless_told() {
        let r = FaultRule { kind: FaultKind::RateLimit, ..rule(FaultKind::RateLimit) }.with_defaults();
        assert_eq!(r.retry_after_s, Some(DEFAULT_RETRY_AFTER_S));
        assert_eq!(rule(FaultKind::Error).with_defaults().retry_after_s, None);
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
