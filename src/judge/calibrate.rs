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

use super::labels::Part;
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
    id: Option<String>,
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

/// One calibration item (a line of the calibration format, or an item of a
/// label store), checked; `at` is `file:line`.
fn parse_item(v: &Json, at: &str, line: usize, base: &Path) -> Result<Item> {
    let Json::Object(o) = v else {
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
        Some(rel) => read_trace(base, rel, at)?,
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
    Ok(Item {
        line,
        id: v["id"].as_str().map(String::from),
        rubric: v["rubric"].as_str().map(String::from),
        data,
        labels: Vec::new(),
        raw_labels: v["labels"].clone(),
    })
}

/// The labelled items calibrate reads: a calibration file, or a label store.
struct Source {
    items: Vec<Item>,
    /// A store: what was used and left out (one line), and each item id used.
    store: Option<(String, Vec<String>)>,
    warnings: Vec<String>,
}

fn read_labels(path: &Path, part: Part) -> Result<Source> {
    let shown = display_path(path);
    let base = path.parent().unwrap_or(Path::new("."));
    if super::labels::is_store(path) {
        let f = super::labels::read(path, part)?;
        let mut items = Vec::new();
        for (line, v) in &f.items {
            items.push(parse_item(v, &format!("{shown}:{line}"), *line, base)?);
        }
        if items.is_empty() {
            return Err(Error::Input(format!(
                "{shown}: no item with a decided criterion label ({})",
                f.counts.line(part, f.split.is_some())
            )));
        }
        let line = f.counts.line(part, f.split.is_some());
        return Ok(Source { items, store: Some((line, f.ids)), warnings: f.warnings });
    }
    if part == Part::HeldOut {
        return Err(Error::Input(format!(
            "{shown}: held-out labels come from a label store and its split (evalua labels split); this file is in the calibration format"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{shown}:{}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        let v: Json = serde_json::from_str(line).map_err(|e| Error::Input(format!("{at}: not JSON: {e}")))?;
        items.push(parse_item(&v, &at, i + 1, base)?);
    }
    if items.is_empty() {
        return Err(Error::Input(format!("{shown}: no labelled items")));
    }
    Ok(Source { items, store: None, warnings: Vec::new() })
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
}

/// What to calibrate, on which labels.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Only the rubric with this name.
    pub rubric: Option<&'a str>,
    /// A label store's calibration part (default) or its held-out part.
    pub part: Part,
}

/// What `calibrate` found: lines about the labels read, and each rubric's calibration.
pub struct Report {
    /// About the labels (a store: what was used and left out).
    pub notes: Vec<String>,
    /// Lines of the label store that were skipped, with `file:line`.
    pub warnings: Vec<String>,
    pub rubrics: Vec<Calibrated>,
}

/// Record a use of a store's held-out items in the suite's ledger (SPEC §13);
/// a warning when they have now been used more often than the suite allows.
fn count_held_out_use(suite: &Suite, ids: &[String]) -> Result<Option<String>> {
    let mut cases = ids.to_vec();
    cases.sort();
    let entry = crate::record::ledger::Entry {
        suite: suite.name.clone(),
        version: suite.version.clone(),
        cases,
        time: jiff::Timestamp::now().to_string(),
        run_id: "calibrate".into(),
        kind: Some("labels".into()),
    };
    let path = crate::record::ledger::path(&suite.dir);
    let uses = crate::record::ledger::append(&path, &entry)?;
    let max = suite.held_out_max_runs as usize;
    Ok((uses > max).then(|| {
        format!(
            "these {} held-out labelled items of {} have now been used {uses} times (held_out_max_runs = {max}): \
             a judge tuned against them stops being measured by them ({})",
            entry.cases.len(),
            entry.suite,
            display_path(&path)
        )
    }))
}

/// Calibrate every rubric the labels speak about.
pub fn run(suite: &Suite, labels: &Path, opts: &Options) -> Result<Report> {
    let only = opts.rubric;
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
    let source = read_labels(labels, opts.part)?;
    let mut report = Report { notes: Vec::new(), warnings: source.warnings, rubrics: Vec::new() };
    if let Some((line, ids)) = &source.store {
        let part = match opts.part {
            Part::Calibration => "calibration part",
            Part::HeldOut => "held-out part",
        };
        report.notes.push(format!("label store {shown} ({part}): {line}"));
        if opts.part == Part::HeldOut
            && let Some(w) = count_held_out_use(suite, ids)?
        {
            report.warnings.push(w);
        }
    }
    let items = source.items;
    let labels_sha = sha256_hex(&std::fs::read(labels).unwrap_or_default());
    // Group the items by rubric.
    let mut groups: Vec<(JudgeSpec, Vec<Item>)> = Vec::new();
    for item in items {
        let fit = if item.rubric.is_none() { only_rubric_with(&rubrics, &item.raw_labels) } else { None };
        let spec = match (&item.rubric, fit) {
            (Some(n), _) => match rubrics.iter().find(|r| r.name() == n) {
                Some(r) => r,
                // --rubric: the items of the suite's other rubrics are not for this one.
                None if only.is_some() && suite.judges.iter().any(|j| j.spec.name() == n) => continue,
                None => {
                    return Err(Error::Input(format!(
                        "{shown}:{}: no rubric named '{n}' in the suite (rubrics: {names:?})",
                        item.line
                    )));
                }
            },
            (None, _) if rubrics.len() == 1 => &rubrics[0],
            // The one rubric that has every criterion the item labels.
            (None, Some(r)) => r,
            (None, None) => {
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
    let out = &mut report.rubrics;
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
                json!({ "line": item.line, "id": item.id, "verdict": c.evidence.get("verdict"), "error": c.evidence.get("error") }),
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
        out.push(Calibrated { text: t, record: record_path, compared: cm.n() });
    }
    Ok(report)
}

/// The only rubric whose criteria include every criterion `labels` (an object) names.
fn only_rubric_with<'a>(rubrics: &'a [JudgeSpec], labels: &Json) -> Option<&'a JudgeSpec> {
    let keys: Vec<&String> = labels.as_object()?.keys().collect();
    let mut fits = rubrics.iter().filter(|r| match r {
        JudgeSpec::Rubric { criteria, .. } => keys.iter().all(|k| criteria.contains(k)),
        _ => false,
    });
    let one = fits.next()?;
    fits.all(|r| r == one).then_some(one)
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
