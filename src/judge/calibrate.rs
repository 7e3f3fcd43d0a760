//! `evalua calibrate SUITE --labels labels.jsonl`: how far a suite's rubric
//! judge agrees with humans.
//!
//! Each line of the labels file is one item a human graded: the trial's data
//! (`input`, `answer`, `calls`, `messages`, `outbox`, or `trace` = a trace file
//! of a run) and `labels`, the human's pass/fail per criterion (an object keyed
//! by criterion text, or a list in criterion order; `true`/`false` or
//! `"pass"`/`"fail"`). `rubric` names the rubric when the suite has several.
//!
//! Printed per rubric: the confusion matrix (human × judge), Cohen's kappa
//! (or why it is undefined), the false-pass rate among human fails and the
//! false-fail rate among human passes with 95% Wilson intervals, and the
//! number of labels. Undeterminable verdicts and judge errors are counted
//! apart, never folded into the matrix. A record keyed by (judge model, prompt
//! hash) goes to `.evalua/calibration/` beside the suite.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::prompt::{Mark, TrialData, prompt_hash, strip_call};
use super::records::calibration_path;
use super::resolve::resolve;
use super::verdict;
use crate::error::{Error, Result};
use crate::record::rundir::read_trace_file;
use crate::spec::{JudgeSpec, Suite};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score interval for k successes in n trials (None when n = 0).
pub fn wilson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

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

    /// Cohen's kappa, or why it is undefined.
    pub fn kappa(&self) -> std::result::Result<f64, String> {
        let n = self.n() as f64;
        if n == 0.0 {
            return Err("undefined: no label was compared".into());
        }
        let po = (self.pass_pass + self.fail_fail) as f64 / n;
        let human_pass = (self.pass_pass + self.pass_fail) as f64 / n;
        let judge_pass = (self.pass_pass + self.fail_pass) as f64 / n;
        let pe = human_pass * judge_pass + (1.0 - human_pass) * (1.0 - judge_pass);
        if (1.0 - pe).abs() < 1e-12 {
            let class = if human_pass > 0.5 { "pass" } else { "fail" };
            return Err(format!(
                "undefined: every human label and every judge verdict is {class}, so agreement expected by \
                 chance is 1 (observed agreement {:.0}%); add items of the other class",
                po * 100.0
            ));
        }
        Ok((po - pe) / (1.0 - pe))
    }
}

fn rate(k: u64, n: u64) -> Json {
    match wilson(k, n) {
        Some((lo, hi)) => json!({ "k": k, "n": n, "rate": k as f64 / n as f64, "wilson95": [lo, hi] }),
        None => json!({ "k": k, "n": n, "rate": null, "wilson95": null }),
    }
}

fn show_rate(k: u64, n: u64, what: &str) -> String {
    match wilson(k, n) {
        Some((lo, hi)) => format!(
            "{k}/{n} = {:.1}%  (95% Wilson interval {:.1}% – {:.1}%)",
            100.0 * k as f64 / n as f64,
            lo * 100.0,
            hi * 100.0
        ),
        None => format!("undefined (no human {what} among the compared labels)"),
    }
}

/// One labelled item.
struct Item {
    line: usize,
    rubric: Option<String>,
    data: TrialData,
    /// The human's verdict per criterion (None: not labelled).
    labels: Vec<Option<bool>>,
    raw_labels: Json,
}

fn label_value(v: &Json) -> Option<Option<bool>> {
    match v {
        Json::Bool(b) => Some(Some(*b)),
        Json::Null => Some(None),
        Json::String(s) if s == "pass" || s == "passed" => Some(Some(true)),
        Json::String(s) if s == "fail" || s == "failed" => Some(Some(false)),
        _ => None,
    }
}

fn read_trace(base: &Path, rel: &str, at: &str) -> Result<TrialData> {
    let t = read_trace_file(&base.join(rel)).map_err(|e| Error::Input(format!("{at}: trace {e}")))?;
    let values = |v: std::result::Result<Json, serde_json::Error>| match v {
        Ok(Json::Array(items)) => items,
        _ => Vec::new(),
    };
    Ok(TrialData {
        calls: values(serde_json::to_value(&t.calls)).iter().map(strip_call).collect(),
        messages: values(serde_json::to_value(&t.messages)),
        outbox: values(serde_json::to_value(&t.outbox)),
        input: t.input,
        answer: t.answer,
    })
}

fn read_labels(path: &Path) -> Result<Vec<Item>> {
    let shown = display_path(path);
    let text = std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{shown}:{}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        let v: Json = serde_json::from_str(line).map_err(|e| Error::Input(format!("{at}: not JSON: {e}")))?;
        let Json::Object(o) = &v else {
            return Err(Error::Input(format!("{at}: each line must be a JSON object")));
        };
        for k in o.keys() {
            if !["id", "rubric", "case", "trace", "input", "answer", "calls", "messages", "outbox", "labels"]
                .contains(&k.as_str())
            {
                return Err(Error::Input(format!(
                    "{at}: unknown key '{k}' (known: id, rubric, trace, input, answer, calls, messages, outbox, labels)"
                )));
            }
        }
        let data = match v["trace"].as_str() {
            Some(rel) => read_trace(base, rel, &at)?,
            None => {
                if !v["answer"].is_string() {
                    return Err(Error::Input(format!("{at}: give 'answer' (the trial's output) or 'trace'")));
                }
                let arr = |k: &str| v[k].as_array().cloned().unwrap_or_default();
                TrialData {
                    input: v["input"].as_str().unwrap_or("").to_string(),
                    answer: v["answer"].as_str().unwrap_or("").to_string(),
                    calls: arr("calls").iter().map(strip_call).collect(),
                    messages: arr("messages"),
                    outbox: arr("outbox"),
                }
            }
        };
        if !(v["labels"].is_object() || v["labels"].is_array()) {
            return Err(Error::Input(format!(
                "{at}: 'labels' is required: {{ \"criterion\": true|false, ... }} or a list in criterion order"
            )));
        }
        items.push(Item {
            line: i + 1,
            rubric: v["rubric"].as_str().map(String::from),
            data,
            labels: Vec::new(),
            raw_labels: v["labels"].clone(),
        });
    }
    if items.is_empty() {
        return Err(Error::Input(format!("{shown}: no labelled items")));
    }
    Ok(items)
}

/// Match an item's labels to the rubric's criteria.
fn bind_labels(item: &mut Item, criteria: &[String], shown: &str) -> Result<()> {
    let at = format!("{shown}:{}", item.line);
    let mut out = vec![None; criteria.len()];
    match &item.raw_labels {
        Json::Array(a) => {
            if a.len() != criteria.len() {
                return Err(Error::Input(format!(
                    "{at}: {} labels for {} criteria (a list gives one label per criterion, in order)",
                    a.len(),
                    criteria.len()
                )));
            }
            for (i, v) in a.iter().enumerate() {
                out[i] = label_value(v).ok_or_else(|| {
                    Error::Input(format!("{at}: label {} must be true/false or \"pass\"/\"fail\"", i + 1))
                })?;
            }
        }
        Json::Object(o) => {
            for (k, v) in o {
                let i = criteria.iter().position(|c| c == k).ok_or_else(|| {
                    Error::Input(format!("{at}: '{k}' is not a criterion of the rubric (criteria: {criteria:?})"))
                })?;
                out[i] = label_value(v).ok_or_else(|| {
                    Error::Input(format!("{at}: label '{k}' must be true/false or \"pass\"/\"fail\""))
                })?;
            }
        }
        _ => {}
    }
    item.labels = out;
    Ok(())
}

/// The calibration of one rubric.
pub struct Calibrated {
    pub text: String,
    pub record: Option<PathBuf>,
    pub compared: u64,
    /// The figures for `calibrate --json`.
    pub json: Json,
}

/// Calibrate every rubric the labels file speaks about.
pub fn run(suite: &Suite, labels: &Path, only: Option<&str>) -> Result<Vec<Calibrated>> {
    let shown = display_path(labels);
    let rubrics: Vec<JudgeSpec> = super::records::suite_judges(suite)
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| matches!(s, JudgeSpec::Rubric { .. }))
        .filter(|s| only.is_none_or(|n| s.name() == n))
        .collect();
    let mut names: Vec<&str> = rubrics.iter().map(|r| r.name()).collect();
    names.dedup();
    if rubrics.is_empty() {
        return Err(Error::Input(match only {
            Some(n) => format!("{}: no judge.rubric named '{n}'", display_path(&suite.path)),
            None => format!("{}: the suite has no judge.rubric to calibrate", display_path(&suite.path)),
        }));
    }
    let items = read_labels(labels)?;
    let labels_sha = sha256_hex(&std::fs::read(labels).unwrap_or_default());
    // Group the items by rubric.
    let mut groups: Vec<(JudgeSpec, Vec<Item>)> = Vec::new();
    for item in items {
        let spec = match &item.rubric {
            Some(n) => rubrics.iter().find(|r| r.name() == n).ok_or_else(|| {
                Error::Input(format!("{shown}:{}: no rubric named '{n}' in the suite (rubrics: {names:?})", item.line))
            })?,
            None if rubrics.len() == 1 => &rubrics[0],
            None => {
                return Err(Error::Input(format!(
                    "{shown}:{}: the suite has {} rubrics; name one with \"rubric\" (one of {names:?}) or pass --rubric",
                    item.line,
                    rubrics.len()
                )));
            }
        };
        match groups.iter_mut().find(|(s, _)| s == spec) {
            Some((_, v)) => v.push(item),
            None => groups.push((spec.clone(), vec![item])),
        }
    }
    let mut out = Vec::new();
    for (spec, mut items) in groups {
        let JudgeSpec::Rubric { name, criteria, models, panel } = &spec else { continue };
        if models.is_empty() {
            return Err(Error::Input(format!("rubric '{name}' has no judge model to calibrate (give it model = ...)")));
        }
        for m in models {
            resolve(m).map_err(|e| Error::Input(format!("rubric '{name}': {e}")))?;
        }
        for item in &mut items {
            bind_labels(item, criteria, &shown)?;
        }
        let cache_dir = super::cache::dir(&suite.dir);
        // A few items at once: judge calls are slow and mostly waiting.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: std::sync::Mutex<Vec<(usize, verdict::Conclusion)>> = Default::default();
        std::thread::scope(|s| {
            for _ in 0..items.len().min(4) {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let c = verdict::rubric(criteria, models, *panel, &item.data, &cache_dir);
                        results.lock().unwrap().push((i, c));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap();
        results.sort_by_key(|(i, _)| *i);

        let mut cm = Confusion::default();
        let (mut undeterminable, mut errors, mut labelled) = (0u64, 0u64, 0u64);
        let mut first_error = None;
        let mut per_item = Vec::new();
        for ((_, c), item) in results.iter().zip(&items) {
            for (i, label) in item.labels.iter().enumerate() {
                let Some(human) = label else { continue };
                labelled += 1;
                match c.marks.as_ref().map(|m| m[i]) {
                    None => {
                        errors += 1;
                        if first_error.is_none() {
                            first_error = c.evidence["error"].as_str().map(String::from);
                        }
                    }
                    Some(Mark::Undeterminable) => undeterminable += 1,
                    Some(m) => match (human, m == Mark::Pass) {
                        (true, true) => cm.pass_pass += 1,
                        (true, false) => cm.pass_fail += 1,
                        (false, true) => cm.fail_pass += 1,
                        (false, false) => cm.fail_fail += 1,
                    },
                }
            }
            per_item.push(
                json!({ "line": item.line, "verdict": c.evidence.get("verdict"), "error": c.evidence.get("error") }),
            );
        }
        let human_fail = cm.fail_pass + cm.fail_fail;
        let human_pass = cm.pass_pass + cm.pass_fail;
        let kappa = cm.kappa();
        let judge_id = spec.model_id();
        let prompt_hash = prompt_hash(&spec);

        let mut t = String::new();
        let _ = writeln!(t, "rubric '{name}'  judge {judge_id}  prompt {}", &prompt_hash[..12]);
        let _ = writeln!(
            t,
            "  {} items, {labelled} labels: {} compared, {undeterminable} undeterminable, {errors} judge errors (the last two left out of the figures)",
            items.len(),
            cm.n()
        );
        let _ = writeln!(t, "                 judge pass  judge fail");
        let _ = writeln!(t, "    human pass   {:>10}  {:>10}", cm.pass_pass, cm.pass_fail);
        let _ = writeln!(t, "    human fail   {:>10}  {:>10}", cm.fail_pass, cm.fail_fail);
        let _ = match &kappa {
            Ok(k) => writeln!(t, "  Cohen's kappa: {k:.3}"),
            Err(why) => writeln!(t, "  Cohen's kappa: {why}"),
        };
        if cm.n() > 0 && (human_fail == 0 || human_pass == 0) {
            let class = if human_fail == 0 { "pass" } else { "fail" };
            let _ = writeln!(
                t,
                "  note: every compared human label is {class}: these labels cannot show whether the judge tells the classes apart"
            );
        }
        let _ = writeln!(
            t,
            "  false-pass rate (judge pass among human fails):  {}",
            show_rate(cm.fail_pass, human_fail, "fails")
        );
        let _ = writeln!(
            t,
            "  false-fail rate (judge fail among human passes): {}",
            show_rate(cm.pass_fail, human_pass, "passes")
        );
        if let Some(e) = &first_error {
            let _ = writeln!(t, "  first judge error: {e}");
        }

        let mut record_path = None;
        if cm.n() > 0 {
            let path = calibration_path(&suite.dir, &judge_id, &prompt_hash);
            let record = json!({
                "rubric": name,
                "judge": judge_id,
                "prompt_sha256": prompt_hash,
                "criteria": criteria,
                "suite": display_path(&suite.path),
                "labels_file": shown,
                "labels_sha256": labels_sha,
                "items": items.len(),
                "labels": labelled,
                "compared": cm.n(),
                "undeterminable": undeterminable,
                "judge_errors": errors,
                "confusion": {
                    "human_pass": { "judge_pass": cm.pass_pass, "judge_fail": cm.pass_fail },
                    "human_fail": { "judge_pass": cm.fail_pass, "judge_fail": cm.fail_fail },
                },
                "kappa": kappa.as_ref().ok(),
                "kappa_note": kappa.as_ref().err(),
                "false_pass_rate": rate(cm.fail_pass, human_fail),
                "false_fail_rate": rate(cm.pass_fail, human_pass),
                "per_item": per_item,
                "created_at": jiff::Timestamp::now().to_string(),
                "evalua_version": env!("CARGO_PKG_VERSION"),
            });
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: {e}", dir.display())))?;
            }
            crate::record::rundir::write_json(&path, &record)?;
            let _ = writeln!(t, "  record: {}", display_path(&path));
            record_path = Some(path);
        } else {
            let _ = writeln!(t, "  no record written: no label could be compared");
        }
        let json = json!({
            "rubric": name,
            "judge": judge_id,
            "prompt_sha256": prompt_hash,
            "items": items.len(),
            "labels": labelled,
            "compared": cm.n(),
            "undeterminable": undeterminable,
            "judge_errors": errors,
            "first_judge_error": first_error,
            "confusion": {
                "human_pass": { "judge_pass": cm.pass_pass, "judge_fail": cm.pass_fail },
                "human_fail": { "judge_pass": cm.fail_pass, "judge_fail": cm.fail_fail },
            },
            "kappa": kappa.as_ref().ok(),
            "kappa_note": kappa.as_ref().err(),
            "false_pass_rate": rate(cm.fail_pass, human_fail),
            "false_fail_rate": rate(cm.pass_fail, human_pass),
            "record": record_path,
        });
        out.push(Calibrated { text: t, record: record_path, compared: cm.n(), json });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_a_hand_computed_interval() {
        // k=3, n=10: p=0.3, z=1.96 → [0.1078, 0.6032]
        let (lo, hi) = wilson(3, 10).unwrap();
        assert!((lo - 0.1078).abs() < 1e-4 && (hi - 0.6032).abs() < 1e-4, "{lo} {hi}");
        assert_eq!(wilson(0, 0), None);
        let (lo, _) = wilson(0, 5).unwrap();
        assert_eq!(lo, 0.0);
    }

    #[test]
    fn kappa_by_hand_and_undefined() {
        // po = 0.7, pe = 0.5*0.5+0.5*0.5 = 0.5 → 0.4
        let cm = Confusion { pass_pass: 7, pass_fail: 3, fail_pass: 3, fail_fail: 7 };
        assert!((cm.kappa().unwrap() - 0.4).abs() < 1e-12);
        let all = Confusion { pass_pass: 5, ..Default::default() };
        assert!(all.kappa().unwrap_err().contains("undefined"));
        // Humans all pass, judge mixed: defined, and 0.
        let skew = Confusion { pass_pass: 4, pass_fail: 1, ..Default::default() };
        assert!(skew.kappa().unwrap().abs() < 1e-12);
    }
}
