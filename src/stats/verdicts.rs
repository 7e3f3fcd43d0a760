//! The verdicts a graded item's source recorded, set against evalua's own
//! (`evalua grade` of τ-bench's results and AgentDojo's logs, re-executed):
//! AgentDojo's `utility` against the legitimate task's checks, its `security`
//! (the attacker's goal reached) against the prohibited checks, τ-bench's
//! `reward` of 1 against acceptance. Every disagreement is a bug on one side,
//! so each is listed by item.

use serde::Serialize;

use crate::record::{Outcome, TrialRecord};

/// At most this many disagreements are listed (all are counted).
const LISTED: usize = 50;

/// Agreement on one recorded field.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Agreement {
    /// Items whose source recorded the field.
    pub n: u32,
    pub agree: u32,
}

/// One item where the source and evalua differ.
#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    /// The item (its source's key: AgentDojo's `<pipeline>/<suite>/<user_task>/<attack>/<injection_task>`).
    pub item: String,
    pub case: String,
    /// `utility`, `security` or `reward`.
    pub field: &'static str,
    pub recorded: serde_json::Value,
    pub evalua: serde_json::Value,
}

/// summary.json's `recorded_verdicts`: present when some item carried one.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordedVerdicts {
    pub items: u32,
    pub utility: Agreement,
    pub security: Agreement,
    pub reward: Agreement,
    /// The first disagreements, in the order the items were graded.
    pub disagreements: Vec<Disagreement>,
    pub disagreements_total: u32,
}

impl RecordedVerdicts {
    /// Count a graded record; records without a recorded verdict are ignored.
    pub fn add(&mut self, r: &TrialRecord) {
        let Some(src) = &r.source else { return };
        let Some(v) = &src.verdict else { return };
        if r.outcome == Outcome::InfraError {
            return;
        }
        self.items += 1;
        let item = src.conversation_id.clone().unwrap_or_else(|| format!("{}.{}", r.case, r.trial));
        let safety = r.safety.as_ref();
        let task_passed = safety.map(|s| s.task_passed).unwrap_or(r.outcome == Outcome::Accepted);
        if let Some(u) = v.get("utility").and_then(|u| u.as_bool()) {
            self.tick(&item, r, "utility", u, task_passed);
        }
        if let Some(s) = v.get("security").and_then(|s| s.as_bool())
            && let Some(safety) = safety.filter(|s| s.attack)
        {
            self.tick(&item, r, "security", s, safety.attack_succeeded);
        }
        if let Some(reward) = v.get("reward").and_then(|x| x.as_f64()) {
            self.tick(&item, r, "reward", reward == 1.0, r.outcome == Outcome::Accepted);
        }
    }

    fn tick(&mut self, item: &str, r: &TrialRecord, field: &'static str, recorded: bool, evalua: bool) {
        let a = match field {
            "utility" => &mut self.utility,
            "security" => &mut self.security,
            _ => &mut self.reward,
        };
        a.n += 1;
        if recorded == evalua {
            a.agree += 1;
            return;
        }
        self.disagreements_total += 1;
        if self.disagreements.len() < LISTED {
            self.disagreements.push(Disagreement {
                item: item.to_string(),
                case: r.case.clone(),
                field,
                recorded: recorded.into(),
                evalua: evalua.into(),
            });
        }
    }

    /// The console's lines (none when no item carried a verdict).
    pub fn lines(&self) -> Vec<String> {
        if self.items == 0 {
            return Vec::new();
        }
        let mut parts = Vec::new();
        for (name, a) in [("utility", &self.utility), ("security", &self.security), ("reward", &self.reward)] {
            if a.n > 0 {
                parts.push(format!("{name} agrees on {} of {}", a.agree, a.n));
            }
        }
        let mut out = vec![format!(
            "recorded verdicts (what the source scored, set against evalua's; {} items): {}",
            self.items,
            parts.join(", ")
        )];
        for d in self.disagreements.iter().take(10) {
            out.push(format!(
                "  differs: {} ({}): {} recorded {}, evalua {}",
                crate::util::inert::console(&d.item),
                crate::util::inert::console(&d.case),
                d.field,
                d.recorded,
                d.evalua
            ));
        }
        if self.disagreements_total > 10 {
            out.push(format!("  … {} more in summary.json (recorded_verdicts)", self.disagreements_total - 10));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Source, TrialSafety};

    fn record(case: &str, accepted: bool, attack: Option<bool>, verdict: serde_json::Value) -> TrialRecord {
        let mut r: TrialRecord = serde_json::from_value(serde_json::json!({
            "case": case, "trial": 1, "seed": 1, "outcome": if accepted { "accepted" } else { "failed" },
            "ended": "final", "checks": [], "wall_ms": 1.0, "answer": "",
            "calls": serde_json::to_value(crate::record::CallCounts::default()).unwrap(),
            "usage": serde_json::to_value(crate::record::Usage::default()).unwrap(),
            "error": null, "trace": "t"
        }))
        .unwrap();
        r.source = Some(Source {
            file: "f".into(),
            conversation_id: Some(format!("p/{case}")),
            verdict: Some(verdict),
            ..Default::default()
        });
        r.safety = attack.map(|succeeded| TrialSafety {
            attack: true,
            task_passed: accepted,
            attack_succeeded: succeeded,
            ..Default::default()
        });
        r
    }

    #[test]
    fn agreement_counts_each_field_and_lists_what_differs() {
        let mut v = RecordedVerdicts::default();
        v.add(&record("u0", true, None, serde_json::json!({ "utility": true, "security": null })));
        v.add(&record("u0+i1", true, Some(true), serde_json::json!({ "utility": true, "security": false })));
        v.add(&record("task_3", false, None, serde_json::json!({ "reward": 0.0 })));
        assert_eq!((v.items, v.utility.n, v.utility.agree), (3, 2, 2));
        assert_eq!((v.security.n, v.security.agree), (1, 0));
        assert_eq!((v.reward.n, v.reward.agree), (1, 1));
        assert_eq!(v.disagreements_total, 1);
        assert_eq!(v.disagreements[0].case, "u0+i1");
        assert_eq!(v.disagreements[0].field, "security");
        let lines = v.lines();
        assert!(lines[0].contains("security agrees on 0 of 1"), "{lines:?}");
        assert!(lines[1].contains("p/u0+i1"), "{lines:?}");
    }
}
