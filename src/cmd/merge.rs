//! `evalua merge RUN_DIR... --out DIR`: check the parts belong to one run and
//! together hold every planned (case, trial) exactly once, then write one run
//! dir with the parts' records (byte for byte) and their traces, copied
//! through the run dirs' trace stores.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::manifest::MergedPart;
use crate::record::rundir::{RunDir, new_run_id};
use crate::record::{KeptState, Trace};
use crate::report;
use crate::stats::{RunData, rundata};

/// What must be the same in every part of one run.
fn identity(r: &RunData) -> [(String, &'static str); 5] {
    let m = &r.manifest;
    let cases: Vec<(&str, u32, Option<&str>)> =
        m.cases.iter().map(|c| (c.id.as_str(), c.trials, c.revision.as_deref())).collect();
    [
        (m.suite.sha256.clone(), "suite file (sha256)"),
        (m.seed.to_string(), "seed"),
        (format!("{:?}", m.trials), "--trials"),
        (format!("{cases:?}"), "cases (ids, trials or revisions)"),
        (format!("{:?}", m.gates), "gates"),
    ]
}

/// A trace's JSON on one line (from a part's pretty-printed trace file).
fn compact(json: &[u8], from: &RunDir, case: &str, trial: u32) -> Result<Vec<u8>> {
    let trace: Trace = serde_json::from_slice(json).map_err(|e| {
        Error::Input(format!("{}: the trace of {case}#{trial} is not a trace: {e}", from.path.display()))
    })?;
    serde_json::to_vec(&trace).map_err(|e| Error::Environment(e.to_string()))
}

pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<u8> {
    let parts: Vec<RunData> = dirs.iter().map(|d| rundata::load(d)).collect::<Result<_>>()?;
    for p in &parts {
        if p.coverage.interrupted > 0 {
            return Err(Error::Input(format!(
                "{}: {} trial(s) of this part were interrupted; finish it with `evalua run SUITE --resume {}` first",
                p.dir.display(),
                p.coverage.interrupted,
                p.dir.display()
            )));
        }
    }
    let first = &parts[0];
    let id0 = identity(first);
    for p in &parts[1..] {
        for ((a, what), (b, _)) in id0.iter().zip(identity(p).iter()) {
            if a != b {
                return Err(Error::Input(format!(
                    "{} and {} are not parts of one run: their {what} differ",
                    first.dir.display(),
                    p.dir.display()
                )));
            }
        }
    }
    let counts: Vec<&str> = parts.iter().filter_map(|p| p.manifest.partition.as_deref()).collect();
    let mut seen: HashMap<(String, u32), usize> = HashMap::new();
    for (pi, p) in parts.iter().enumerate() {
        for (info, trials) in p.infos.iter().zip(&p.trials) {
            for t in trials {
                if let Some(prev) = seen.insert((info.id.clone(), t.trial), pi) {
                    return Err(Error::Input(format!(
                        "trial {}#{} is in both {} and {}: pass each part once",
                        info.id,
                        t.trial,
                        parts[prev].dir.display(),
                        p.dir.display()
                    )));
                }
            }
        }
    }
    let mut missing = Vec::new();
    for (c, n) in first.infos.iter().zip(&first.planned) {
        for t in 1..=*n {
            if !seen.contains_key(&(c.id.clone(), t)) {
                missing.push(format!("{}#{t}", c.id));
            }
        }
    }
    if !missing.is_empty() {
        let shown = missing[..missing.len().min(5)].join(", ");
        return Err(Error::Input(format!(
            "the parts lack {} planned trial(s) (e.g. {shown}); partitions given: {}; pass every part hash:I/N for I = 1..N",
            missing.len(),
            if counts.is_empty() { "none".to_string() } else { counts.join(", ") }
        )));
    }

    // Plan order: manifest case order, trials 1..=n. The lines are copied as
    // written (keys this version does not know are kept).
    let mut by_key: HashMap<(String, u32), (String, &RunDir)> = HashMap::new();
    for p in &parts {
        let path = p.run_dir.file("trials.jsonl");
        for item in p.run_dir.records()? {
            let (_, line, rec) = item?;
            if !rec.trace.starts_with("traces/") || rec.trace.contains("..") || rec.trace.contains('\\') {
                return Err(Error::Input(format!(
                    "{}: trace path {:?} is not under traces/",
                    path.display(),
                    rec.trace
                )));
            }
            by_key.insert((rec.case, rec.trial), (line, &p.run_dir));
        }
    }
    let run_id = new_run_id();
    let dir = RunDir::create(Some(out), first.suite(), &run_id)?;
    let mut trials = dir.trials_writer()?;
    let mut count = 0usize;
    // Traces first, a batch at a time, then the batch's records: a record is
    // written only once its trace is stored.
    let store = |batch: &[(String, u32, Vec<u8>)]| {
        let items: Vec<(&str, u32, &[u8])> = batch.iter().map(|(c, t, j)| (c.as_str(), *t, j.as_slice())).collect();
        dir.write_traces(&items)
            .map_err(|e| Error::Environment(format!("{}: cannot store traces: {e}", dir.path.display())))
    };
    let mut batch = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for (c, n) in first.infos.iter().zip(&first.planned) {
        for t in 1..=*n {
            let (line, from) = &by_key[&(c.id.clone(), t)];
            if let Some(json) = from.trace_json(&c.id, t)? {
                // A part of the earlier layout stored pretty JSON: packed traces are one line each.
                let json = if json.contains(&b'\n') { compact(&json, from, &c.id, t)? } else { json };
                // What the trial changed goes along, so the merged run can be re-graded.
                let state = serde_json::from_slice::<Trace>(&json).ok().and_then(|tr| tr.state);
                if let Some(record) = state {
                    let kept = KeptState::Copied { from: (*from).clone(), case: c.id.clone(), trial: t, record };
                    // A part's missing or unreadable state stays missing: re-grading names it then.
                    if let Err(e) = dir.write_state(&c.id, t, &kept) {
                        eprintln!("warning: {}: cannot copy the kept state of {}#{t}: {e}", from.path.display(), c.id);
                    }
                }
                batch.push((c.id.clone(), t, json));
            }
            lines.push(line);
            count += 1;
            if lines.len() == 256 {
                store(&batch)?;
                batch.clear();
                for l in lines.drain(..) {
                    trials.append_line(l)?;
                }
            }
        }
    }
    store(&batch)?;
    for l in lines {
        trials.append_line(l)?;
    }
    let mut manifest = first.manifest.clone();
    manifest.run_id = run_id;
    manifest.partition = None;
    manifest.planned_trials = Some(count);
    manifest.resumes = Vec::new();
    manifest.merged_from = Some(
        parts
            .iter()
            .map(|p| MergedPart {
                dir: p.dir.display().to_string(),
                run_id: p.run_id().to_string(),
                partition: p.manifest.partition.clone(),
            })
            .collect(),
    );
    dir.write_manifest(&manifest)?;
    let merged = rundata::load(&dir.path)?;
    dir.write_json("summary.json", &merged.summary_file())?;
    report::write_all(&merged)?;
    print!("{}", report::console_for(&merged));
    println!("merged {} parts ({count} trials)", parts.len());
    Ok(if merged.gates_passed() { 0 } else { 1 })
}
