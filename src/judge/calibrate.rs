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
//! number of labels, then each label the judge disagreed with (item, criterion,
//! both verdicts, the judge's failure mode and quotes). Undeterminable
//! verdicts and judge errors are counted apart, never folded into the matrix. A record keyed by (judge model, prompt
//! hash) goes to `.evalua/calibration/` beside the suite.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::labels::Part;
use super::prompt::{Mark, TrialData, prompt_hash, strip_call};
use super::records::calibration_path;
use super::resolve::resolve;
use super::verdict::{self, Conclusion, Status};
use crate::error::{Error, Result};
use crate::record::rundir::read_trace_file;
use crate::spec::{JudgeSpec, Suite};
use crate::stats::agree::{Judged, change_interval, false_pass, judge_kappa};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

/// Disagreements printed per judge (the record keeps every one).
const SHOWN_DISAGREEMENTS: usize = 20;

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
        answer: t.record.answer,
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
    /// `--recheck`: kappa now (None: undefined), and whether kappa or the
    /// false-pass rate got worse beyond their intervals.
    pub recheck: Option<(Option<f64>, bool)>,
    /// The figures for `calibrate --json`.
    pub json: Json,
}

/// What to calibrate, on which labels.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Only the rubric with this name.
    pub rubric: Option<&'a str>,
    /// A label store's calibration part (default) or its held-out part.
    pub part: Part,
    /// `--recheck`: measure the judges on the held-out part and compare with
    /// their last measurement (the change in kappa and false-pass rate, with
    /// intervals); decides a `judge_kappa` gate.
    pub recheck: bool,
    /// Read and write the judge cache (false under `--no-cache`).
    pub judge_cache: bool,
}

/// What `calibrate` found: lines about the labels read, and each rubric's calibration.
pub struct Report {
    /// About the labels (a store: what was used and left out).
    pub notes: Vec<String>,
    /// Lines of the label store that were skipped, with `file:line`.
    pub warnings: Vec<String>,
    pub rubrics: Vec<Calibrated>,
    /// `--recheck` with a `judge_kappa` gate: its verdict line, and whether it held.
    pub gate: Option<(String, bool)>,
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
    let mut rubrics: Vec<JudgeSpec> = super::records::suite_judges(suite)
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| matches!(s, JudgeSpec::Rubric { .. } | JudgeSpec::Cascade { .. }))
        .filter(|s| only.is_none_or(|n| s.name() == n))
        .collect();
    // The simulated users' adherence judges, measured on the labels of `view --review users`.
    let adherence: Vec<JudgeSpec> = super::records::adherence_judges(suite)
        .into_iter()
        .filter(|s| !rubrics.iter().any(|r| r.name() == s.name()))
        .collect();
    let is_adherence = |s: &JudgeSpec| adherence.iter().any(|a| a == s);
    rubrics.extend(adherence.iter().filter(|s| only.is_none_or(|n| s.name() == n)).cloned());
    let mut names: Vec<&str> = rubrics.iter().map(|r| r.name()).collect();
    names.dedup();
    if rubrics.is_empty() {
        return Err(Error::Input(match only {
            Some(n) => format!("{}: no judge.rubric named '{n}'", display_path(&suite.path)),
            None => format!("{}: the suite has no judge.rubric to calibrate", display_path(&suite.path)),
        }));
    }
    let part = if opts.recheck { Part::HeldOut } else { opts.part };
    let source = read_labels(labels, part)?;
    let mut report = Report { notes: Vec::new(), warnings: source.warnings, rubrics: Vec::new(), gate: None };
    if let Some((line, ids)) = &source.store {
        let which = match part {
            Part::Calibration => "calibration part",
            Part::HeldOut => "held-out part",
        };
        report.notes.push(format!("label store {shown} ({which}): {line}"));
        if part == Part::HeldOut
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
                None if only.is_some()
                    && (suite.judges.iter().any(|j| j.spec.name() == n) || adherence.iter().any(|a| a.name() == n)) =>
                {
                    continue;
                }
                // A user reviewed without an adherence judge: nothing to measure.
                None if n == super::labels::USER_RUBRIC => {
                    report.warnings.push(format!(
                        "{shown}:{}: labels of a simulated user with no adherence judge ('{n}'): left out",
                        item.line
                    ));
                    continue;
                }
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
    let ctx = RecordCtx { suite, labels_file: &shown, labels_sha: &labels_sha, recheck: opts.recheck };
    let cache = super::cache::Cache::of(&suite.dir, opts.judge_cache);
    for (spec, mut items) in groups {
        if is_adherence(&spec) {
            let criteria = [super::labels::USER_CRITERION.to_string()];
            for item in &mut items {
                bind_labels(item, &criteria, &shown)?;
            }
            let cs = conclude_all(&items, |d| as_whole(verdict::rubric_of(&spec, d, &cache)));
            report.rubrics.push(calibrated(&spec, &criteria, "adherence judge", &items, &cs, Vec::new(), &ctx)?);
            continue;
        }
        let criteria = spec.criteria().unwrap_or_default().to_vec();
        let name = spec.name().to_string();
        let models = spec.models();
        if models.is_empty() {
            return Err(Error::Input(format!("rubric '{name}' has no judge model to calibrate (give it model = ...)")));
        }
        for m in models {
            resolve(m).map_err(|e| Error::Input(format!("rubric '{name}': {e}")))?;
        }
        for item in &mut items {
            bind_labels(item, &criteria, &shown)?;
        }
        match &spec {
            JudgeSpec::Cascade { first, then, escalate, .. } => {
                // Each stage on every item (to measure it alone), and the cascade as it would run.
                let a = conclude_all(&items, |d| verdict::rubric_of(first, d, &cache));
                let b = conclude_all(&items, |d| verdict::rubric_of(then, d, &cache));
                let whole: Vec<Conclusion> = a
                    .iter()
                    .zip(&b)
                    .map(|(x, y)| verdict::combine(first, then, escalate, x.clone(), || y.clone()))
                    .collect();
                let escalated = a.iter().filter(|c| verdict::escalates(escalate, c).is_some()).count();
                let cost = |cs: &[Conclusion]| -> (usize, f64) {
                    let calls: Vec<&verdict::JudgeCall> = cs.iter().flat_map(|c| &c.calls).collect();
                    (calls.len(), calls.iter().filter_map(|c| c.call.cost_usd).sum())
                };
                let (n_all, cost_all) = cost(&whole);
                let (n_a, cost_a) = cost(&a);
                let extra = vec![
                    format!(
                        "  escalated ({escalate}) {escalated} of {} items ({:.1}%): decided by the first judge {}, by the second {}",
                        items.len(),
                        100.0 * escalated as f64 / items.len().max(1) as f64,
                        items.len() - escalated,
                        escalated
                    ),
                    format!(
                        "  cost as a cascade: {n_all} calls, ${cost_all:.4} (the first judge {n_a} calls, ${cost_a:.4}; calls made now: cached answers cost nothing)"
                    ),
                ];
                report.rubrics.push(calibrated(&spec, &criteria, "cascade", &items, &whole, extra, &ctx)?);
                for (stage, sspec, cs) in [("first", first, &a), ("then", then, &b)] {
                    let (n, c) = cost(cs);
                    let extra = vec![format!("  this stage alone, on every item: {n} calls, ${c:.4}")];
                    report.rubrics.push(calibrated(
                        sspec,
                        sspec.criteria().unwrap_or_default(),
                        &format!("  stage {stage} of cascade '{name}': rubric"),
                        &items,
                        cs,
                        extra,
                        &ctx,
                    )?);
                }
            }
            _ => {
                let cs = conclude_all(&items, |d| verdict::rubric_of(&spec, d, &cache));
                report.rubrics.push(calibrated(&spec, &criteria, "rubric", &items, &cs, Vec::new(), &ctx)?);
            }
        }
    }
    if opts.recheck
        && let Some(g) = suite.gates.iter().find(|g| g.metric == crate::spec::gate::Metric::JudgeKappa)
    {
        // Every judge rechecked (not a cascade's stages alone) must keep kappa at the
        // threshold, and neither kappa nor the false-pass rate may get worse beyond its interval.
        let mut failed = Vec::new();
        for c in report.rubrics.iter().filter(|c| !c.text.starts_with("  stage ")) {
            let name = c.text.split('\'').nth(1).unwrap_or("?");
            match c.recheck {
                Some((Some(k), false)) if k >= g.threshold => {}
                Some((Some(k), dropped)) => failed.push(if dropped {
                    format!("'{name}' got worse beyond its interval (kappa {k:.3})")
                } else {
                    format!("'{name}' kappa {k:.3} < {}", g.threshold)
                }),
                _ => failed.push(format!("'{name}' has no defined kappa on the held-out labels")),
            }
        }
        let held = failed.is_empty();
        let line = if held {
            format!("gate {} = {}: held", g.name, g.threshold)
        } else {
            format!("gate {} = {}: FAILED: {}", g.name, g.threshold, failed.join("; "))
        };
        report.gate = Some((line, held));
    }
    Ok(report)
}

/// Where calibration records go and what they cite.
struct RecordCtx<'a> {
    suite: &'a Suite,
    labels_file: &'a str,
    labels_sha: &'a str,
    recheck: bool,
}

/// One judge's conclusion on every item, a few items at once (judge calls are slow and mostly waiting).
/// A judge's verdict as a whole, as one mark: what a reviewer of a simulated
/// user labels ("the simulated user followed its profile").
fn as_whole(mut c: Conclusion) -> Conclusion {
    let mark = match c.status {
        Status::Passed => Mark::Pass,
        Status::Failed => Mark::Fail,
        _ => Mark::Undeterminable,
    };
    c.marks = c.marks.map(|_| vec![mark]);
    c
}

fn conclude_all(items: &[Item], f: impl Fn(&TrialData) -> Conclusion + Sync) -> Vec<Conclusion> {
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

/// One human label compared with one judge verdict.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pair {
    /// The item's id (or `line N` of the labels file).
    pub item: String,
    pub criterion: usize,
    pub human: bool,
    pub judge: bool,
}

/// Human labels against a judge's conclusions.
struct Measured {
    cm: Confusion,
    undeterminable: u64,
    errors: u64,
    labelled: u64,
    first_error: Option<String>,
    per_item: Vec<Json>,
    pairs: Vec<Pair>,
    /// Each label the judge's verdict differs from, with the judge's reason.
    disagreements: Vec<Disagreement>,
}

/// A label the judge's verdict differs from.
#[derive(Debug, Clone, serde::Serialize)]
struct Disagreement {
    /// The item's id (or `line N` of the labels file).
    item: String,
    /// `file:line` of the item in the labels file.
    at: String,
    /// 1-based, as the judge sees it.
    criterion: usize,
    criterion_text: String,
    judge: &'static str,
    human: &'static str,
    /// The judge's quotes for this criterion and its failure mode: why it decided so.
    quotes: Vec<String>,
    failure_mode: Option<String>,
}

impl Disagreement {
    /// Two lines: which label, then the verdicts and the judge's reason.
    fn show(&self) -> String {
        let mut why = Vec::new();
        if let Some(f) = &self.failure_mode {
            why.push(format!("failure mode {f:?}"));
        }
        if !self.quotes.is_empty() {
            why.push(format!("quoted {}", self.quotes.iter().map(|q| format!("{q:?}")).collect::<Vec<_>>().join(", ")));
        }
        let why = if why.is_empty() { "none given (no quote, no failure mode)".to_string() } else { why.join("; ") };
        format!(
            "    {}  {}  criterion {} {:?}\n      judge {}, human {}; the judge's reason: {why}",
            self.item, self.at, self.criterion, self.criterion_text, self.judge, self.human
        )
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

fn mark_word(pass: bool) -> &'static str {
    if pass { "pass" } else { "fail" }
}

fn measure(items: &[Item], conclusions: &[Conclusion], criteria: &[String], shown: &str) -> Measured {
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

/// The text and the record of one judge's calibration.
#[allow(clippy::too_many_arguments)]
fn calibrated(
    spec: &JudgeSpec,
    criteria: &[String],
    what: &str,
    items: &[Item],
    conclusions: &[Conclusion],
    extra: Vec<String>,
    ctx: &RecordCtx,
) -> Result<Calibrated> {
    let m = measure(items, conclusions, criteria, ctx.labels_file);
    let cm = m.cm;
    let human_fail = cm.fail_pass + cm.fail_fail;
    let human_pass = cm.pass_pass + cm.pass_fail;
    let kappa = cm.kappa();
    let judge_id = spec.model_id();
    let prompt_hash = prompt_hash(spec);
    let name = spec.name();

    let mut t = String::new();
    let _ = writeln!(t, "{what} '{name}'  judge {judge_id}  prompt {}", &prompt_hash[..12]);
    let _ = writeln!(
        t,
        "  {} items, {} labels: {} compared, {} undeterminable, {} judge errors (the last two left out of the figures)",
        items.len(),
        m.labelled,
        cm.n(),
        m.undeterminable,
        m.errors
    );
    for line in &extra {
        let _ = writeln!(t, "{line}");
    }
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
    if let Some(e) = &m.first_error {
        let _ = writeln!(t, "  first judge error: {e}");
    }
    if !m.disagreements.is_empty() {
        let n = m.disagreements.len();
        let _ = writeln!(
            t,
            "  {n} disagreement{} (the judge's verdict against the human label):",
            if n == 1 { "" } else { "s" }
        );
        for d in m.disagreements.iter().take(SHOWN_DISAGREEMENTS) {
            let _ = writeln!(t, "{}", d.show());
        }
        if n > SHOWN_DISAGREEMENTS {
            let _ = writeln!(t, "    … and {} more, all in the record", n - SHOWN_DISAGREEMENTS);
        }
    }
    let mut json = json!({
        "rubric": name,
        "what": what.trim(),
        "type": spec.kind(),
        "judge": judge_id,
        "prompt_sha256": prompt_hash,
        "items": items.len(),
        "labels": m.labelled,
        "compared": cm.n(),
        "undeterminable": m.undeterminable,
        "judge_errors": m.errors,
        "first_judge_error": m.first_error,
        "confusion": {
            "human_pass": { "judge_pass": cm.pass_pass, "judge_fail": cm.pass_fail },
            "human_fail": { "judge_pass": cm.fail_pass, "judge_fail": cm.fail_fail },
        },
        "kappa": kappa.as_ref().ok(),
        "kappa_note": kappa.as_ref().err(),
        "false_pass_rate": rate(cm.fail_pass, human_fail),
        "false_fail_rate": rate(cm.pass_fail, human_pass),
        "record": null,
    });

    if ctx.recheck {
        let path = calibration_path(&ctx.suite.dir, &judge_id, &prompt_hash);
        let (outcome, lines) = recheck(spec, &path, &m, &ctx.suite.dir)?;
        for l in lines {
            let _ = writeln!(t, "{l}");
        }
        // The held-out measurement joins the judge's record (made if it has none).
        let mut record: Json = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .filter(Json::is_object)
            .unwrap_or_else(|| {
                json!({ "rubric": name, "type": spec.kind(), "judge": judge_id, "prompt_sha256": prompt_hash,
                        "criteria": spec.criteria(), "suite": display_path(&ctx.suite.path) })
            });
        record["held_out"] = json!({
            "labels_file": ctx.labels_file,
            "labels_sha256": ctx.labels_sha,
            "items": items.len(),
            "compared": cm.n(),
            "confusion": {
                "human_pass": { "judge_pass": cm.pass_pass, "judge_fail": cm.pass_fail },
                "human_fail": { "judge_pass": cm.fail_pass, "judge_fail": cm.fail_fail },
            },
            "kappa": kappa.as_ref().ok(),
            "kappa_note": kappa.as_ref().err(),
            "false_pass_rate": rate(cm.fail_pass, human_fail),
            "pairs": m.pairs,
            "disagreements": m.disagreements,
            "at": jiff::Timestamp::now().to_string(),
        });
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: {e}", dir.display())))?;
        }
        crate::record::rundir::write_json_file(&path, &record)?;
        let _ = writeln!(t, "  record: {} (held_out)", display_path(&path));
        json["record"] = json!(path);
        json["recheck"] = json!({ "kappa": outcome.0, "worse_beyond_interval": outcome.1 });
        return Ok(Calibrated { text: t, record: Some(path), compared: cm.n(), recheck: Some(outcome), json });
    }
    let mut record_path = None;
    if cm.n() > 0 {
        let path = calibration_path(&ctx.suite.dir, &judge_id, &prompt_hash);
        let record = json!({
            "rubric": name,
            "type": spec.kind(),
            "judge": judge_id,
            "prompt_sha256": prompt_hash,
            "criteria": spec.criteria(),
            "suite": display_path(&ctx.suite.path),
            "labels_file": ctx.labels_file,
            "labels_sha256": ctx.labels_sha,
            "items": items.len(),
            "labels": m.labelled,
            "compared": cm.n(),
            "undeterminable": m.undeterminable,
            "judge_errors": m.errors,
            "confusion": {
                "human_pass": { "judge_pass": cm.pass_pass, "judge_fail": cm.pass_fail },
                "human_fail": { "judge_pass": cm.fail_pass, "judge_fail": cm.fail_fail },
            },
            "kappa": kappa.as_ref().ok(),
            "kappa_note": kappa.as_ref().err(),
            "false_pass_rate": rate(cm.fail_pass, human_fail),
            "false_fail_rate": rate(cm.pass_fail, human_pass),
            "pairs": m.pairs,
            "disagreements": m.disagreements,
            "per_item": m.per_item,
            "created_at": jiff::Timestamp::now().to_string(),
            "evalua_version": env!("CARGO_PKG_VERSION"),
        });
        let mut record = record;
        // A held-out measurement made before stays with the record of the same judge.
        if let Some(before) = std::fs::read_to_string(&path).ok().and_then(|s| serde_json::from_str::<Json>(&s).ok())
            && before.get("held_out").is_some()
        {
            record["held_out"] = before["held_out"].clone();
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: {e}", dir.display())))?;
        }
        crate::record::rundir::write_json_file(&path, &record)?;
        let _ = writeln!(t, "  record: {}", display_path(&path));
        record_path = Some(path);
    } else {
        let _ = writeln!(t, "  no record written: no label could be compared");
    }
    json["record"] = json!(record_path);
    Ok(Calibrated { text: t, record: record_path, compared: cm.n(), recheck: None, json })
}

/// An earlier measurement of a judge of this rubric to compare a recheck with.
struct Baseline {
    what: String,
    pairs: Vec<Pair>,
    /// Measured on held-out items too: compared item by item.
    paired: bool,
}

/// The measurement a recheck is compared with, most telling first: the
/// held-out measurement of another (model, prompt) of this rubric (the judge
/// before its change), else that judge's calibration; else this judge's own
/// earlier held-out measurement, else its calibration.
fn baseline(suite_dir: &Path, name: &str, current: &Path) -> Option<Baseline> {
    let mut found: Vec<(u8, String, Baseline)> = Vec::new();
    let rd = std::fs::read_dir(super::records::calibration_dir(suite_dir)).ok()?;
    for e in rd.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else { continue };
        let Ok(v) = serde_json::from_str::<Json>(&text) else { continue };
        if v["rubric"] != name {
            continue;
        }
        let same = e.path() == current;
        let who = format!(
            "{} prompt {}",
            v["judge"].as_str().unwrap_or("?"),
            v["prompt_sha256"].as_str().unwrap_or("").get(..12).unwrap_or("")
        );
        let pairs = |x: &Json| serde_json::from_value::<Vec<Pair>>(x["pairs"].clone()).ok().filter(|p| !p.is_empty());
        if let Some(p) = pairs(&v["held_out"]) {
            let at = v["held_out"]["at"].as_str().unwrap_or("").to_string();
            let what = format!("the held-out measurement of {who} ({at}), item by item");
            found.push((if same { 2 } else { 0 }, at, Baseline { what, pairs: p, paired: true }));
        }
        if let Some(p) = pairs(&v) {
            let at = v["created_at"].as_str().unwrap_or("").to_string();
            let what = format!("the calibration of {who} ({at}) on the calibration part (other items)");
            found.push((if same { 3 } else { 1 }, at, Baseline { what, pairs: p, paired: false }));
        }
    }
    // Most telling first; among equals the latest.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    found.into_iter().next().map(|(_, _, b)| b)
}

/// Number items (shared between the sides when paired) and turn pairs into `Judged`.
fn numbered(now: &[Pair], before: &[Pair], paired: bool) -> ((Vec<Judged>, usize), (Vec<Judged>, usize)) {
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let side = |pairs: &[Pair], ids: &mut std::collections::HashMap<String, usize>| {
        let v: Vec<Judged> = pairs
            .iter()
            .map(|p| {
                let n = ids.len();
                let item = *ids.entry(p.item.clone()).or_insert(n);
                Judged { item, human: p.human, judge: p.judge }
            })
            .collect();
        v
    };
    let a = side(now, &mut ids);
    let n_a = ids.len();
    if !paired {
        ids.clear();
    }
    let b = side(before, &mut ids);
    let n_b = ids.len();
    if paired { ((a, n_b), (b, n_b)) } else { ((a, n_a), (b, n_b)) }
}

fn signed(v: f64, pct: bool) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { v };
    if pct { format!("{:+.1} pt", v * 100.0) } else { format!("{v:+.3}") }
}

/// Compare a judge's held-out measurement with its baseline: the lines to
/// print, and (kappa now, whether kappa or the false-pass rate got worse beyond the interval).
fn recheck(
    spec: &JudgeSpec,
    current: &Path,
    m: &Measured,
    suite_dir: &Path,
) -> Result<((Option<f64>, bool), Vec<String>)> {
    let mut lines = Vec::new();
    let to_judged = |pairs: &[Pair]| numbered(pairs, &[], false).0.0;
    let now_j = to_judged(&m.pairs);
    let k_now = judge_kappa(&now_j, None).ok();
    let fp_now = false_pass(&now_j, None);
    let show = |k: Option<f64>| k.map(|k| format!("{k:.3}")).unwrap_or_else(|| "undefined".into());
    let showp = |p: Option<f64>| p.map(|p| format!("{:.1}%", p * 100.0)).unwrap_or_else(|| "undefined".into());
    let Some(b) = baseline(suite_dir, spec.name(), current) else {
        lines.push(format!(
            "  recheck: kappa {}, false-pass rate {} on the held-out labels; no earlier measurement of '{}' to compare with: this one is the baseline of the next recheck",
            show(k_now),
            showp(fp_now),
            spec.name()
        ));
        return Ok(((k_now, false), lines));
    };
    let ((now, n_now), (before, n_before)) = numbered(&m.pairs, &b.pairs, b.paired);
    let k_before = judge_kappa(&before, None).ok();
    let fp_before = false_pass(&before, None);
    lines.push(format!("  recheck against {}", b.what));
    let kappa_iv = change_interval((&now, n_now), (&before, n_before), b.paired, |p, w| judge_kappa(p, w).ok());
    let fp_iv = change_interval((&now, n_now), (&before, n_before), b.paired, false_pass);
    let mut worse = false;
    for (label, x, y, iv, pct, bad_if_up) in
        [("kappa", k_before, k_now, kappa_iv, false, false), ("false-pass rate", fp_before, fp_now, fp_iv, true, true)]
    {
        let fmt = |v: Option<f64>| if pct { showp(v) } else { show(v) };
        let change = match (x, y) {
            (Some(x), Some(y)) => signed(y - x, pct),
            _ => "undefined".into(),
        };
        let (iv_text, beyond) = match iv {
            Some([lo, hi]) => {
                let beyond = if bad_if_up { lo > 0.0 } else { hi < 0.0 };
                (format!("95% interval {} – {}", signed(lo, pct), signed(hi, pct)), beyond)
            }
            None => ("no interval: too few items or an undefined figure".into(), false),
        };
        worse |= beyond;
        let verdict = if beyond {
            if bad_if_up { "  WORSE beyond the interval" } else { "  DROPPED beyond the interval" }
        } else {
            ""
        };
        lines.push(format!("    {label:<16} {} → {}  change {change}  ({iv_text}){verdict}", fmt(x), fmt(y)));
    }
    Ok(((k_now, worse), lines))
}

/// The only rubric whose criteria include every criterion `labels` (an object) names.
fn only_rubric_with<'a>(rubrics: &'a [JudgeSpec], labels: &Json) -> Option<&'a JudgeSpec> {
    let keys: Vec<&String> = labels.as_object()?.keys().collect();
    let mut fits = rubrics.iter().filter(|r| match r {
        JudgeSpec::Rubric { criteria, .. } => keys.iter().all(|k| criteria.contains(k)),
        JudgeSpec::Cascade { .. } => r.criteria().is_some_and(|c| keys.iter().all(|k| c.contains(k))),
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
