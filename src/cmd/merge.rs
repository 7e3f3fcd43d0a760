//! `evalua merge RUN_DIR|FOLDER... --out DIR`: check the parts belong to one
//! run, finished, and together hold every planned (case, trial) exactly once,
//! then write one run dir with the parts' records (byte for byte) and their
//! traces, copied through the run dirs' trace stores.
//!
//! A FOLDER (no manifest.json of its own) holds one part per sub-folder, as a
//! Slurm array or an Indexed Job writes them (`parts/1`, `parts/2`, ...). A
//! part that failed (no summary.json, or `"complete": false`) or is missing
//! makes the merge refuse, naming it: merging it would silently shrink the run.

use crate::record::files;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::manifest::MergedPart;
use crate::record::rundir::{RunDir, new_run_id};
use crate::record::state::{StateRecord, safe_rel};
use crate::record::{KeptState, Trace};
use crate::report;
use crate::run::Partition;
use crate::stats::rundata::Completion;
use crate::stats::{RunData, rundata};
use crate::util::digest::sha256_file;
use crate::util::paths::shell_word;

/// What must be the same in every part of one run.
fn identity(r: &RunData) -> [(String, &'static str); 9] {
    let m = &r.manifest;
    let cases: Vec<(&str, u32, Option<&str>)> =
        m.cases.iter().map(|c| (c.id.as_str(), c.trials, c.revision.as_deref())).collect();
    [
        (format!("{:?}", (&m.suite.name, &m.suite.version)), "suite (name and version)"),
        (m.suite.sha256.clone(), "suite file (sha256)"),
        (m.grader_sha256.clone(), "suite sources and evalua's stdlib (grader sha256)"),
        (format!("{:?}", m.suite.schema.as_ref().map(|s| &s.sha256)), "sandbox schema (sha256)"),
        (format!("{:?}", m.suite.db.as_ref().map(|d| &d.kind)), "database backend"),
        (m.seed.to_string(), "seed"),
        (format!("{:?}", m.trials), "--trials"),
        (format!("{cases:?}"), "cases (ids, trials or revisions: a case or its fixture changed)"),
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

/// The run dirs named by `args`: each is a run dir, or a folder whose
/// sub-folders are. A sub-folder that is not a run dir is a part whose run
/// never started; it is named, not skipped.
fn expand(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for a in args {
        if files::is_run_dir(a) || !a.is_dir() {
            out.push(a.clone()); // a run dir, or an error RunDir::open words
            continue;
        }
        let entries = std::fs::read_dir(a).map_err(|e| Error::Input(format!("{}: {e}", a.display())))?;
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        if subs.is_empty() {
            return Err(Error::Input(format!(
                "{}: neither a run dir (no manifest.json) nor a folder of parts (no sub-folders)",
                a.display()
            )));
        }
        // Numeric names in numeric order (parts/2 before parts/10).
        subs.sort_by_key(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (name.parse::<u64>().map_err(|_| name.clone()), name)
        });
        let not_runs: Vec<String> =
            subs.iter().filter(|p| !files::is_run_dir(p)).map(|p| p.display().to_string()).collect();
        if !not_runs.is_empty() {
            return Err(Error::Input(format!(
                "{}: not a run dir (no manifest.json): its run failed before it started; re-run that part",
                not_runs.join(", ")
            )));
        }
        out.extend(subs);
    }
    Ok(out)
}

/// Refuse parts whose run did not finish, naming every one.
fn check_finished(dirs: &[PathBuf]) -> Result<()> {
    let mut bad = Vec::new();
    for d in dirs {
        if !files::is_run_dir(d) {
            continue; // RunDir::open says why
        }
        match rundata::completion(d)? {
            Completion::Complete => {}
            Completion::NoSummary => bad.push(format!(
                "{} did not finish (no summary.json: its run failed, was killed, or is still running)",
                d.display()
            )),
            Completion::Interrupted => bad.push(format!(
                "{} is incomplete (its run was interrupted: summary.json says \"complete\": false)",
                d.display()
            )),
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    Err(Error::Input(format!(
        "{}; finish each with `evalua run SUITE --resume PART` (or run it again), then merge again",
        bad.join("; ")
    )))
}

/// With partitioned parts: one split (the same N), each part once, none missing.
fn check_partitions(parts: &[RunData]) -> Result<()> {
    let mut by_index: BTreeMap<u32, &RunData> = BTreeMap::new();
    let mut count: Option<(u32, &RunData)> = None;
    for p in parts {
        let Some(text) = p.manifest.partition.as_deref() else { continue };
        let Ok(part) = Partition::parse(text) else {
            return Err(Error::Input(format!(
                "{}: manifest.json: partition {text:?} is not hash:I/N",
                p.dir.display()
            )));
        };
        match count {
            Some((n, first)) if n != part.count => {
                return Err(Error::Input(format!(
                    "{} is part of a split into {n} but {} of a split into {}: merge the parts of one split",
                    first.dir.display(),
                    p.dir.display(),
                    part.count
                )));
            }
            None => count = Some((part.count, p)),
            _ => {}
        }
        if let Some(prev) = by_index.insert(part.index, p) {
            return Err(Error::Input(format!(
                "{} and {} are both part {part}: pass each part once",
                prev.dir.display(),
                p.dir.display()
            )));
        }
    }
    if let Some((n, _)) = count {
        let missing: Vec<String> =
            (1..=n).filter(|i| !by_index.contains_key(i)).map(|i| format!("hash:{i}/{n}")).collect();
        if !missing.is_empty() {
            let (one, verb, it) = if missing.len() == 1 { ("part", "is", "it") } else { ("parts", "are", "them") };
            return Err(Error::Input(format!(
                "{one} {} {verb} missing: no run dir given holds {it} (a task that failed before it started, or a part not passed)",
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

pub fn merge(args: &[PathBuf], out: &Path) -> Result<u8> {
    let dirs = expand(args)?;
    check_finished(&dirs)?;
    let parts: Vec<RunData> = dirs.iter().map(|d| rundata::load(d)).collect::<Result<_>>()?;
    for p in &parts {
        if p.coverage.interrupted > 0 {
            return Err(Error::Input(format!(
                "{}: {} trial(s) of this part were interrupted; finish it with `evalua run {} --resume {}` first",
                p.dir.display(),
                p.coverage.interrupted,
                if p.manifest.suite.path.is_empty() { "SUITE".to_string() } else { shell_word(&p.manifest.suite.path) },
                shell_word(&p.dir.display().to_string())
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
    check_partitions(&parts)?;
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
        let path = p.run_dir.file(files::TRIALS);
        for item in p.run_dir.records()? {
            let (_, line, rec) = item?;
            if !files::in_traces_dir(&rec.trace) {
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
                    vet_kept(from, &c.id, t, &record)?;
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
    manifest.partition_from = None;
    // Each part made its own databases (its own prefix, in its manifest).
    if let Some(db) = manifest.suite.db.as_mut() {
        db.prefix = None;
    }
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
    dir.write_json(files::SUMMARY, &merged.summary_file())?;
    report::write_all(&merged)?;
    print!("{}", report::console_for(&merged));
    println!("merged {} parts ({count} trials)", parts.len());
    Ok(if merged.gates_passed() { 0 } else { 1 })
}

/// A part's kept state, checked before it is copied: no symlink from the
/// part's folder down to a kept file (the file, its folders, `traces/`), and
/// every kept file and database change a regular file whose sha256 and size
/// are its trace's record. A part is untrusted (a download, another
/// machine's disk): copying what a symlink in it points at would carry any
/// file of this host into the merged run dir. A file that is missing stays
/// missing (re-grading names it).
fn vet_kept(part: &RunDir, case: &str, trial: u32, rec: &StateRecord) -> Result<()> {
    let refused = |p: &Path, why: &str| Error::Input(format!("{}: {why}: the part is refused", p.display()));
    let check = |p: &Path, sha256: Option<&str>, bytes: Option<u64>| -> Result<()> {
        let rel = p.strip_prefix(&part.path).map_err(|_| refused(p, "outside the part"))?;
        let mut cur = part.path.clone();
        for c in rel.components() {
            cur.push(c);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => return Err(refused(&cur, "a symlink in a part's kept state")),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(refused(&cur, &e.to_string())),
            }
        }
        let (sha, len) = sha256_file(p).map_err(|e| refused(p, &e.to_string()))?;
        if sha256.is_some_and(|s| s != sha) || bytes.is_some_and(|b| b != len) {
            return Err(refused(p, "its sha256 differs from the trace's record"));
        }
        Ok(())
    };
    if let Some(d) = &rec.db {
        check(&part.db_file(case, trial, d), Some(&d.sha256), Some(d.bytes))?;
    }
    let dir = part.files_dir(case, trial);
    for f in rec.files.iter().filter(|f| f.symlink.is_none() && !f.skipped) {
        if !safe_rel(&f.path) {
            return Err(refused(&dir, &format!("kept path {:?} leaves the work dir", f.path)));
        }
        check(&dir.join(&f.path), Some(f.sha256.as_deref().unwrap_or("")), None)?;
    }
    Ok(())
}
