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

mod items;
mod measure;
mod recheck;

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::labels::Part;
use super::prompt::prompt_hash;
use super::records::calibration_path;
use super::resolve::resolve;
use super::verdict::{self, Conclusion};
use crate::error::{Error, Result};
use crate::record::calibration::{self as form, CalibrationRecord};
use crate::spec::{JudgeSpec, Suite};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;
use items::{Item, bind_labels, read_labels};
pub use measure::{Confusion, Measured};
use measure::{as_whole, conclude_all, measure};
pub use recheck::{Change, Recheck};

/// The calibration of one judge: what was measured and where it was recorded
/// (`report::calibration` prints it).
pub struct Calibrated {
    /// What it is: `rubric`, `cascade`, `adherence judge`, or a cascade's stage.
    pub what: String,
    /// A stage of a cascade, measured alone (the cascade's gate is the whole's).
    pub stage: bool,
    pub name: String,
    pub judge: String,
    pub prompt_sha256: String,
    pub kind: String,
    pub items: usize,
    pub measured: Measured,
    /// Lines about a cascade (escalation, cost) or a stage's cost.
    pub notes: Vec<String>,
    /// The record written (None: no label could be compared).
    pub record: Option<PathBuf>,
    /// `--recheck`: the held-out measurement against its baseline.
    pub recheck: Option<Recheck>,
}

impl Calibrated {
    pub fn compared(&self) -> u64 {
        self.measured.cm.n()
    }

    /// The figures for `calibrate --json`.
    pub fn json(&self) -> Json {
        let (m, cm) = (&self.measured, &self.measured.cm);
        let kappa = cm.kappa();
        let mut j = json!({
            "rubric": self.name, "what": self.what.trim(), "type": self.kind, "judge": self.judge,
            "prompt_sha256": self.prompt_sha256, "items": self.items, "labels": m.labelled, "compared": cm.n(),
            "undeterminable": m.undeterminable, "judge_errors": m.errors, "first_judge_error": m.first_error,
            "confusion": cm.form(), "kappa": kappa.as_ref().ok(), "kappa_note": kappa.as_ref().err(),
            "false_pass_rate": cm.false_pass(), "false_fail_rate": cm.false_fail(), "record": self.record,
        });
        if let Some(r) = &self.recheck {
            j["recheck"] = json!({ "kappa": r.kappa, "worse_beyond_interval": r.worse });
        }
        j
    }
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
        for c in report.rubrics.iter().filter(|c| !c.stage) {
            let name = &c.name;
            match c.recheck.as_ref().map(|r| (r.kappa, r.worse)) {
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

/// Measure one judge (`what` it is) on the items and write its record.
fn calibrated(
    spec: &JudgeSpec,
    criteria: &[String],
    what: &str,
    items: &[Item],
    conclusions: &[Conclusion],
    notes: Vec<String>,
    ctx: &RecordCtx,
) -> Result<Calibrated> {
    let m = measure(items, conclusions, criteria, ctx.labels_file);
    let (judge, prompt_sha256) = (spec.model_id(), prompt_hash(spec));
    let path = calibration_path(&ctx.suite.dir, &judge, &prompt_sha256);
    let known = || CalibrationRecord {
        rubric: spec.name().to_string(),
        kind: spec.kind().to_string(),
        judge: judge.clone(),
        prompt_sha256: prompt_sha256.clone(),
        criteria: spec.criteria().map(<[String]>::to_vec),
        suite: display_path(&ctx.suite.path),
        calibration: None,
        held_out: None,
    };
    let mut done = Calibrated {
        what: what.to_string(),
        stage: what.starts_with("  stage "),
        name: spec.name().to_string(),
        judge: judge.clone(),
        prompt_sha256: prompt_sha256.clone(),
        kind: spec.kind().to_string(),
        items: items.len(),
        measured: m,
        notes,
        record: None,
        recheck: None,
    };
    let m = &done.measured;
    if ctx.recheck {
        let outcome = recheck::recheck(spec, &path, m, &ctx.suite.dir);
        // The held-out measurement joins the judge's record (made if it has none).
        let mut record = CalibrationRecord::read(&path).unwrap_or_else(known);
        record.held_out = Some(form::HeldOut {
            labels_file: ctx.labels_file.to_string(),
            labels_sha256: ctx.labels_sha.to_string(),
            items: items.len(),
            agreement: m.agreement(),
            at: jiff::Timestamp::now().to_string(),
        });
        record.write(&path)?;
        done.record = Some(path);
        done.recheck = Some(outcome);
        return Ok(done);
    }
    if m.cm.n() > 0 {
        let mut record = known();
        record.calibration = Some(form::Calibration {
            labels_file: ctx.labels_file.to_string(),
            labels_sha256: ctx.labels_sha.to_string(),
            items: items.len(),
            labels: m.labelled,
            agreement: m.agreement(),
            undeterminable: m.undeterminable,
            judge_errors: m.errors,
            false_fail_rate: m.cm.false_fail(),
            per_item: m.per_item.clone(),
            created_at: jiff::Timestamp::now().to_string(),
            evalua_version: env!("CARGO_PKG_VERSION").to_string(),
        });
        // A held-out measurement made before stays with the record of the same judge.
        record.held_out = CalibrationRecord::read(&path).and_then(|before| before.held_out);
        record.write(&path)?;
        done.record = Some(path);
    }
    Ok(done)
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
