//! `evalua labels agree | split | export STORE`: what a label store (SPEC
//! §15) says about its annotators, its held-out share, and the calibration
//! items it makes. `--json` prints one document (`"schema":
//! "evalua.labels/1"`, through `cmd::json` like every other command's, so an
//! error is a document too) on stdout, the human text on stderr.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::{Error, Result};
use crate::judge::labels::{self as store_items, Part};
use crate::record::labels::{self, Split, Store};
use crate::stats::agree::{Agreement, Estimate, Majority, Ratings};
use crate::util::paths::display_path;

/// Disagreeing items listed per scope in the text (`--json` lists all).
const SHOWN_DISAGREEMENTS: usize = 20;

/// The document's keys (`--json`; `schema`, `exit_code`, `errors` and
/// `warnings` are added by `cmd::json` as for every command).
fn set_all(doc: serde_json::Value) {
    if let serde_json::Value::Object(m) = doc {
        for (k, v) in m {
            super::json::set(&k, v);
        }
    }
}

fn read_heads(path: &Path) -> Result<Store<serde::de::IgnoredAny>> {
    let store: Store<serde::de::IgnoredAny> = labels::read(path)?;
    for w in &store.warnings {
        super::json::warn(w.clone());
    }
    Ok(store)
}

fn num(v: f64) -> String {
    format!("{v:.3}")
}

fn show_estimate(e: &Estimate) -> String {
    match (e.value, &e.interval) {
        (Some(v), Some([lo, hi])) => format!("{}  [{}, {}]", num(v), num(*lo), num(*hi)),
        (Some(v), None) => format!("{}  (no interval: fewer than two items)", num(v)),
        (None, _) => e.note.clone().unwrap_or_else(|| "undefined".into()),
    }
}

fn criterion_name(c: &Option<String>) -> String {
    match c {
        Some(c) => format!("criterion {c:?}"),
        None => "the item as a whole (criterion null)".into(),
    }
}

fn write_agreement(t: &mut String, title: &str, a: &Agreement, n_annotators: usize) {
    let _ = writeln!(t, "{title}: {} items, {} units; unsure verdicts left out: {}", a.items, a.units, a.unsure);
    if a.pairs.is_empty() {
        let _ = writeln!(t, "  no two annotators labelled a common item");
    }
    let width = a.pairs.iter().map(|p| p.a.chars().count() + p.b.chars().count() + 3).max().unwrap_or(0);
    for p in &a.pairs {
        let names = format!("{} × {}", p.a, p.b);
        let _ = writeln!(t, "  Cohen's κ  {names:<width$}  {}  ({} compared)", show_estimate(&p.kappa), p.compared);
    }
    let _ = writeln!(
        t,
        "  Krippendorff's α (nominal, {n_annotators} annotators)  {}  ({} units with two or more verdicts)",
        show_estimate(&a.alpha),
        a.pairable
    );
    if !a.disagreements.is_empty() {
        let _ = writeln!(t, "  disagreements ({}):", a.disagreements.len());
        for d in a.disagreements.iter().take(SHOWN_DISAGREEMENTS) {
            let who: Vec<String> = d.verdicts.iter().map(|(a, v)| format!("{a} {v}")).collect();
            let what = match &d.criterion {
                Some(c) if title.starts_with("overall") => format!(" · {c:?}"),
                _ => String::new(),
            };
            let _ = writeln!(t, "    {}{what}: {}", d.item, who.join(", "));
        }
        if a.disagreements.len() > SHOWN_DISAGREEMENTS {
            let _ =
                writeln!(t, "    … and {} more (--json lists every one)", a.disagreements.len() - SHOWN_DISAGREEMENTS);
        }
    }
}

/// `labels agree STORE`: κ per pair, α over all, per criterion and overall.
/// The annotators who share no unit (item and criterion) with another
/// annotator's pass/fail verdict: agreement cannot see them.
fn overlapping_no_one(r: &Ratings) -> Vec<String> {
    let mut overlaps = vec![false; r.annotators.len()];
    for u in &r.units {
        if u.votes.len() >= 2 {
            for (a, _) in &u.votes {
                overlaps[*a] = true;
            }
        }
    }
    r.annotators.iter().zip(overlaps).filter(|(_, o)| !o).map(|(a, _)| a.clone()).collect()
}

pub fn agree(path: &Path, json_out: bool) -> Result<u8> {
    let store = read_heads(path)?;
    let current = store.current();
    let r = Ratings::of(&current);
    let shown = display_path(path);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{shown}: {} labels in force ({} lines, {} skipped), {} items, {} annotators: {}",
        current.len(),
        store.lines,
        store.warnings.len(),
        r.items.len(),
        r.annotators.len(),
        r.annotators.join(", ")
    );
    if r.annotators.len() < 2 {
        let _ = writeln!(t, "agreement needs labels from two annotators at least");
    }
    let alone = overlapping_no_one(&r);
    if r.annotators.len() >= 2 && !alone.is_empty() {
        let _ = writeln!(
            t,
            "overlapping no one: {} gave no pass/fail verdict on an item (and criterion) another annotator judged: their labels count in no κ and no α",
            alone.join(", ")
        );
    }
    let mut per = Vec::new();
    for (c, units) in r.criteria.iter().zip(r.by_criterion()) {
        let a = r.agreement(&units);
        let _ = writeln!(t);
        write_agreement(&mut t, &criterion_name(c), &a, r.annotators.len());
        per.push(json!({ "criterion": c, "agreement": a }));
    }
    let all: Vec<&_> = r.units.iter().collect();
    let overall = r.agreement(&all);
    if r.criteria.len() > 1 {
        let _ = writeln!(t);
        write_agreement(
            &mut t,
            &format!("overall ({} criteria pooled)", r.criteria.len()),
            &overall,
            r.annotators.len(),
        );
    }
    let _ = writeln!(
        t,
        "\n(95% intervals: percentile bootstrap over items, {} resamples, seeded)",
        crate::stats::agree::RESAMPLES
    );
    if json_out {
        eprint!("{t}");
        set_all(json!({
            "command": "agree",
            "store": shown,
            "lines": store.lines,
            "labels": current.len(),
            "items": r.items.len(),
            "annotators": r.annotators,
            "overlapping_no_one": alone,
            "criteria": per,
            "overall": overall,
            "resamples": crate::stats::agree::RESAMPLES,
        }));
    } else {
        print!("{t}");
    }
    Ok(0)
}

fn stratum_name(m: Majority) -> &'static str {
    match m {
        Majority::Pass => "pass",
        Majority::Fail => "fail",
        _ => "undecided",
    }
}

/// `labels split STORE --held-out F --seed N`: writes STORE.split.json.
pub fn split(path: &Path, fraction: f64, seed: u64, force: bool, json_out: bool) -> Result<u8> {
    if !(0.0..=1.0).contains(&fraction) || !fraction.is_finite() {
        return Err(Error::Input(format!("--held-out {fraction}: give a fraction between 0 and 1 (e.g. 0.3)")));
    }
    let store = read_heads(path)?;
    let current = store.current();
    let r = Ratings::of(&current);
    if r.items.is_empty() {
        return Err(Error::Input(format!("{}: no labels to split", display_path(path))));
    }
    let strata = r.strata();
    let held = crate::stats::agree::held_out(&strata, fraction, seed);
    let split = Split { seed, fraction, held_out: held };
    let out = labels::split_path(path);
    let shown = display_path(&out);
    let before = labels::read_split(path).ok().flatten();
    if let Some(b) = &before
        && b != &split
        && !force
    {
        return Err(Error::Input(format!(
            "{shown} already holds another split (seed {}, fraction {}, {} held out): replacing it would move held-out \
             items into calibration; pass --force to replace it anyway",
            b.seed,
            b.fraction,
            b.held_out.len()
        )));
    }
    labels::write_split(path, &split)?;
    let held: std::collections::HashSet<&str> = split.held_out.iter().map(String::as_str).collect();
    let mut by = Vec::new();
    for m in [Majority::Fail, Majority::Pass, Majority::Tie] {
        let all = strata.iter().filter(|(_, s)| stratum_name(*s) == stratum_name(m)).collect::<Vec<_>>();
        let h = all.iter().filter(|(id, _)| held.contains(id.as_str())).count();
        by.push((stratum_name(m), h, all.len()));
    }
    let mut t = format!(
        "held out {} of {} items (seed {seed}, fraction {fraction}); by majority verdict: {}\nwrote {shown}{}\n",
        split.held_out.len(),
        strata.len(),
        by.iter().map(|(n, h, a)| format!("{n} {h} of {a}")).collect::<Vec<_>>().join(", "),
        if before.as_ref().is_some_and(|b| b != &split) { " (replacing the split it held)" } else { "" }
    );
    t.push_str("calibrate uses the other items; --held-out (and --recheck) use these, counted in the ledger\n");
    if json_out {
        eprint!("{t}");
        set_all(json!({
            "command": "split", "store": display_path(path), "file": shown,
            "seed": seed, "fraction": fraction, "items": strata.len(), "held_out": split.held_out,
            "strata": by.iter().map(|(n, h, a)| json!({ "majority": n, "held_out": h, "items": a })).collect::<Vec<_>>(),
        }));
    } else {
        print!("{t}");
    }
    Ok(0)
}

/// Count a use of the held-out part in the ledger beside the store's suite.
fn count_export(path: &Path, ids: &[String]) -> Result<()> {
    let mut cases = ids.to_vec();
    cases.sort();
    let suite = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let entry = crate::record::ledger::Entry {
        suite,
        version: None,
        cases,
        time: jiff::Timestamp::now().to_string(),
        run_id: "labels export".into(),
        kind: Some("labels".into()),
    };
    let ledger = crate::record::ledger::path(&labels::suite_dir_of(path));
    let uses = crate::record::ledger::append(&ledger, &entry)?;
    eprintln!("held-out use counted in {} ({uses} so far)", display_path(&ledger));
    Ok(())
}

/// `labels export STORE`: the calibration format `calibrate --labels` reads.
pub fn export(path: &Path, out: Option<&PathBuf>, held_out: bool, json_out: bool) -> Result<u8> {
    if json_out && out.is_none() {
        return Err(Error::Input("--json prints the summary on stdout: give --out FILE for the items".into()));
    }
    let part = if held_out { Part::HeldOut } else { Part::Calibration };
    let f = store_items::read(path, part)?;
    for w in &f.warnings {
        super::json::warn(w.clone());
    }
    let mut text = String::new();
    for (_, v) in &f.items {
        text.push_str(&serde_json::to_string(v).unwrap_or_default());
        text.push('\n');
    }
    match out {
        Some(o) => crate::record::rundir::write_streamed(o, |w| {
            use std::io::Write;
            w.write_all(text.as_bytes()).map_err(|e| Error::Environment(format!("{}: {e}", o.display())))
        })?,
        None => print!("{text}"),
    }
    if held_out {
        count_export(path, &f.ids)?;
    }
    let line = f.counts.line(part, f.split.is_some());
    let summary = format!(
        "{}: {} calibration lines; {line}{}",
        display_path(path),
        f.items.len(),
        out.map(|o| format!("\nwrote {}", display_path(o))).unwrap_or_default()
    );
    eprintln!("{summary}");
    if json_out {
        set_all(json!({
            "command": "export", "store": display_path(path),
            "out": out.map(|o| display_path(o)), "part": if held_out { "held_out" } else { "calibration" },
            "lines": f.items.len(), "counts": f.counts,
        }));
    }
    Ok(0)
}
