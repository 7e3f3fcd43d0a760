//! A judge's conclusions on the labelled items against the human labels:
//! the confusion matrix, kappa and the rates (through `stats`), and each
//! label the judge disagreed with, with its reason.

use serde_json::{Value as Json, json};

use super::items::Item;
use crate::judge::prompt::{Mark, TrialData};
use crate::judge::verdict::{Conclusion, Status};
use crate::record::calibration::{Agreement, ConfusionForm, ConfusionRow, Disagreement, Pair, Rate};
use crate::stats::agree::kappa;
use crate::stats::estimators::wilson;

/// Human × judge counts over the labels both gave a verdict on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Confusion {
    /// human pass, judge pass
    pub pass_pass: u64,
    /// human pass, judge fail (a false fail)
    pub pass_fail: u64,
    /// human fail, judge pass (a false pass)
    pub fail_pass: u64,
    /// human fail, judge fail
    pub fail_fail: u64,
}

impl Confusion {
    pub fn n(&self) -> u64 {
        self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail
    }

    pub fn human_pass(&self) -> u64 {
        self.pass_pass + self.pass_fail
    }

    pub fn human_fail(&self) -> u64 {
        self.fail_pass + self.fail_fail
    }

    /// Cohen's kappa (`stats::agree::kappa`), or why it is undefined, in a calibration's words.
    pub fn kappa(&self) -> std::result::Result<f64, String> {
        let f = |x: u64| x as f64;
        kappa(f(self.pass_pass), f(self.pass_fail), f(self.fail_pass), f(self.fail_fail)).map_err(|_| {
            if self.n() == 0 {
                return "undefined: no label was compared".into();
            }
            let po = f(self.pass_pass + self.fail_fail) / f(self.n());
            let class = if self.human_pass() * 2 > self.n() { "pass" } else { "fail" };
            format!(
                "undefined: every human label and every judge verdict is {class}, so agreement expected by \
                 chance is 1 (observed agreement {:.0}%); add items of the other class",
                po * 100.0
            )
        })
    }

    /// As written in the record.
    pub fn form(&self) -> ConfusionForm {
        ConfusionForm {
            human_pass: ConfusionRow { judge_pass: self.pass_pass, judge_fail: self.pass_fail },
            human_fail: ConfusionRow { judge_pass: self.fail_pass, judge_fail: self.fail_fail },
        }
    }

    /// Judge pass among human fails.
    pub fn false_pass(&self) -> Rate {
        rate(self.fail_pass, self.human_fail())
    }

    /// Judge fail among human passes.
    pub fn false_fail(&self) -> Rate {
        rate(self.pass_fail, self.human_pass())
    }
}

/// k of n with its Wilson interval.
pub fn rate(k: u64, n: u64) -> Rate {
    let small = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    let iv = wilson(small(k), small(n));
    Rate { k, n, rate: (n > 0).then(|| k as f64 / n as f64), wilson95: iv.map(|(lo, hi)| [lo, hi]) }
}

/// Human labels against a judge's conclusions.
pub struct Measured {
    pub cm: Confusion,
    pub undeterminable: u64,
    pub errors: u64,
    pub labelled: u64,
    pub first_error: Option<String>,
    pub per_item: Vec<Json>,
    pub pairs: Vec<Pair>,
    /// Each label the judge's verdict differs from, with the judge's reason.
    pub disagreements: Vec<Disagreement>,
}

impl Measured {
    /// What a record keeps of it.
    pub fn agreement(&self) -> Agreement {
        let kappa = self.cm.kappa();
        Agreement {
            compared: self.cm.n(),
            confusion: self.cm.form(),
            kappa: kappa.as_ref().ok().copied(),
            kappa_note: kappa.err(),
            false_pass_rate: self.cm.false_pass(),
            pairs: self.pairs.clone(),
            disagreements: self.disagreements.clone(),
        }
    }
}

/// The judge's quotes for criterion `i` (0-based) and its failure mode, from a conclusion's evidence.
fn judge_reason(evidence: &Json, i: usize) -> (Vec<String>, Option<String>) {
    let quotes = evidence["quotes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["criterion"].as_u64() == Some(i as u64 + 1))
        .filter_map(|q| q["quote"].as_str().map(String::from))
        .collect();
    // A panel has no single failure mode: each vote's, when they name one.
    let mut modes: Vec<String> = match evidence["failure_mode"].as_str() {
        Some(f) => vec![f.to_string()],
        None => evidence["votes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["failure_mode"].as_str().map(String::from))
            .collect(),
    };
    modes.dedup();
    (quotes, (!modes.is_empty()).then(|| modes.join(" | ")))
}

fn mark_word(pass: bool) -> String {
    if pass { "pass" } else { "fail" }.to_string()
}

/// The judge's `conclusions` (one per item) against the items' labels; `shown` is the labels file.
pub fn measure(items: &[Item], conclusions: &[Conclusion], criteria: &[String], shown: &str) -> Measured {
    let mut m = Measured {
        cm: Confusion::default(),
        undeterminable: 0,
        errors: 0,
        labelled: 0,
        first_error: None,
        per_item: Vec::new(),
        pairs: Vec::new(),
        disagreements: Vec::new(),
    };
    for (c, item) in conclusions.iter().zip(items) {
        let key = item.id.clone().unwrap_or_else(|| format!("line {}", item.line));
        for (i, label) in item.labels.iter().enumerate() {
            let Some(human) = *label else { continue };
            m.labelled += 1;
            match c.marks.as_ref().map(|x| x[i]) {
                None => {
                    m.errors += 1;
                    if m.first_error.is_none() {
                        m.first_error = match &c.status {
                            Status::Skipped(why) => Some(why.clone()),
                            _ => c.evidence["error"].as_str().map(String::from),
                        };
                    }
                }
                Some(Mark::Undeterminable) => m.undeterminable += 1,
                Some(mark) => {
                    let judge = mark == Mark::Pass;
                    match (human, judge) {
                        (true, true) => m.cm.pass_pass += 1,
                        (true, false) => m.cm.pass_fail += 1,
                        (false, true) => m.cm.fail_pass += 1,
                        (false, false) => m.cm.fail_fail += 1,
                    }
                    m.pairs.push(Pair { item: key.clone(), criterion: i, human, judge });
                    if human != judge {
                        let (quotes, failure_mode) = judge_reason(&c.evidence, i);
                        m.disagreements.push(Disagreement {
                            item: key.clone(),
                            at: format!("{shown}:{}", item.line),
                            criterion: i + 1,
                            criterion_text: criteria.get(i).cloned().unwrap_or_default(),
                            judge: mark_word(judge),
                            human: mark_word(human),
                            quotes,
                            failure_mode,
                        });
                    }
                }
            }
        }
        let mut row = json!({ "line": item.line, "id": item.id, "verdict": c.evidence.get("verdict"), "error": c.evidence.get("error") });
        if let Some(d) = c.evidence.get("decided_by") {
            row["decided_by"] = d.clone();
        }
        m.per_item.push(row);
    }
    m
}

/// A judge's verdict as a whole, as one mark: what a reviewer of a simulated
/// user labels ("the simulated user followed its profile").
pub fn as_whole(mut c: Conclusion) -> Conclusion {
    let mark = match c.status {
        Status::Passed => Mark::Pass,
        Status::Failed => Mark::Fail,
        _ => Mark::Undeterminable,
    };
    c.marks = c.marks.map(|_| vec![mark]);
    c
}

/// One judge's conclusion on every item, a few items at once (judge calls are slow and mostly waiting).
pub fn conclude_all(items: &[Item], f: impl Fn(&TrialData) -> Conclusion + Sync) -> Vec<Conclusion> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<(usize, Conclusion)>> = Default::default();
    std::thread::scope(|s| {
        for _ in 0..items.len().min(4) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let c = f(&item.data);
                    results.lock().unwrap_or_else(|e| e.into_inner()).push((i, c));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_by_hand_and_undefined() {
        // po = 0.7, pe = 0.5*0.5+0.5*0.5 = 0.5 → 0.4
        let cm = Confusion { pass_pass: 7, pass_fail: 3, fail_pass: 3, fail_fail: 7 };
        assert!((cm.kappa().unwrap() - 0.4).abs() < 1e-12);
        let all = Confusion { pass_pass: 5, ..Default::default() };
        let why = all.kappa().unwrap_err();
        assert!(why.contains("every human label and every judge verdict is pass"), "{why}");
        assert!(Confusion::default().kappa().unwrap_err().contains("no label was compared"));
        // Humans all pass, judge mixed: defined, and 0.
        let skew = Confusion { pass_pass: 4, pass_fail: 1, ..Default::default() };
        assert!(skew.kappa().unwrap().abs() < 1e-12);
    }

    #[test]
    fn a_rate_carries_the_wilson_interval_of_stats() {
        // k=3, n=10: p=0.3, z=1.96 → [0.1078, 0.6032]
        let r = rate(3, 10);
        let [lo, hi] = r.wilson95.unwrap();
        assert!((lo - 0.1078).abs() < 1e-4 && (hi - 0.6032).abs() < 1e-4, "{lo} {hi}");
        assert_eq!(rate(0, 0).wilson95, None);
        assert_eq!(rate(0, 0).rate, None);
    }
}
