//! `evalua grade SUITE --traces PATH…`: grade recorded traces with the
//! suite's monitors and checks, and write a run dir (manifest `kind =
//! "graded"`) with the usual figures, gates and reports.
//!
//! The work is a pipeline: a reader thread reads the inputs and hands each
//! item on as soon as it is complete (`otel::read`); `--jobs` workers grade
//! items (`grade`); the main thread gives each graded item its case and
//! trial number in input order, two writer threads store the traces, and the
//! main thread appends each record to trials.jsonl after its trace is stored,
//! in input order. Memory stays flat: only items in flight are held.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};

use crate::error::{Error, Result};
use crate::grade::{self, Done};
use crate::lua::load;
use crate::otel::read::{self, Item};
use crate::record::manifest::{CaseEntry, GateEntry, Machine, RunKind};
use crate::record::rundir::{RunDir, new_run_id};
use crate::record::{Manifest, Trace, TrialRecord};
use crate::report;
use crate::run::manifest::{grader_hash_of, suite_identity};
use crate::spec::Suite;
use crate::stats::{CaseInfo, rundata};
use crate::util::paths::display_path;

pub struct GradeArgs {
    pub suite: PathBuf,
    pub traces: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub jobs: usize,
    pub quiet: bool,
    pub argv: Vec<String>,
}

/// Warnings printed in full; the rest are counted (all are in the manifest).
const SHOWN_WARNINGS: usize = 20;
const WRITERS: usize = 2;

enum Msg {
    Graded(usize, Done),
    WorkerDone,
    Stored(usize, Box<TrialRecord>),
}

fn manifest(suite: &Suite, run_id: &str, argv: &[String], jobs: usize) -> Manifest {
    let (entry, sources, tool_contract_sha256) = suite_identity(suite);
    Manifest {
        kind: RunKind::Graded,
        datasets: Default::default(),
        partition_from: None,
        evalua_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.to_string(),
        started_at: jiff::Timestamp::now().to_string(),
        command: argv.to_vec(),
        suite: entry,
        sources,
        grader_sha256: grader_hash_of(suite),
        tool_contract_sha256,
        agent: serde_json::Value::Null,
        judges: crate::judge::manifest(suite),
        cases: Vec::new(),
        budget: Default::default(),
        default_deadline_s: 0.0,
        trials: None,
        seed: 0,
        partition: None,
        jobs,
        filters: Default::default(),
        gates: suite.gates.iter().map(|g| GateEntry { name: g.name.clone(), threshold: g.threshold, on: g.on }).collect(),
        invalid_cases: Vec::new(),
        infra_error_policy: "a graded trace is never an infra_error: an item that cannot be read is not graded and is listed in warnings".into(),
        machine: Machine::this(),
        // Grading recorded traces starts no process.
        isolation: Default::default(),
        merged_from: None,
        trial_state: None,
        regraded_from: None,
        planned_trials: None,
        judge_checks: Vec::new(),
        resumes: Vec::new(),
        monitors: suite.monitors.iter().map(|m| m.name.clone()).collect(),
        trace_inputs: Vec::new(),
        warnings: Vec::new(),
        exports: Vec::new(),
        extra: Default::default(),
    }
}

pub fn grade(a: GradeArgs) -> Result<u8> {
    let suite = load::load(&a.suite)?;
    let inputs = read::discover(&a.traces)?;
    let run_id = new_run_id();
    let dir = RunDir::create(a.out.as_deref(), &suite.name, &run_id)?;
    let mut man = manifest(&suite, &run_id, &a.argv, a.jobs);
    dir.write_manifest(&man)?;

    let ctx = grade::Context::new(suite);
    let suite = &ctx.suite;
    let jobs = a.jobs.max(1);
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let (item_tx, item_rx) = mpsc::sync_channel::<(usize, Item)>(jobs * 16);
    let item_rx = Mutex::new(item_rx);
    let (main_tx, main_rx) = mpsc::channel::<Msg>();
    // Graded items not yet handed to the trace writers are bounded: a grader
    // takes a permit before an item and the main loop gives it back once the
    // item has moved on, so a slow disk holds the graders back instead of
    // piling graded items up in memory.
    let in_flight = jobs * 32;
    let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = permit_tx.try_send(());
    }
    let permit_rx = Mutex::new(permit_rx);
    let (store_tx, store_rx) = mpsc::sync_channel::<(usize, Box<TrialRecord>, Box<Trace>)>(256);
    let store_rx = Mutex::new(store_rx);

    let mut writer = dir.trials_writer()?;
    let mut case_index: HashMap<String, usize> = HashMap::new();
    let mut infos: Vec<CaseInfo> = Vec::new();
    let mut trials_per_case: Vec<u32> = Vec::new();
    let progress = if !a.quiet && std::io::stderr().is_terminal() {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {pos} items graded {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };

    let mut failure: Option<Error> = None;
    let mut stats_out = Vec::new();
    std::thread::scope(|scope| {
        // Reader.
        let reader = {
            let warnings = warnings.clone();
            let inputs = &inputs;
            scope.spawn(move || {
                let mut next = 0usize;
                let mut warn = |w: String| warnings.lock().map(|mut v| v.push(w)).unwrap_or(());
                let mut emit = |item: Item| -> Result<()> {
                    item_tx.send((next, item)).map_err(|_| Error::Environment("the graders stopped".into()))?;
                    next += 1;
                    Ok(())
                };
                read::read(inputs, jobs, &mut warn, &mut emit)
            })
        };
        // Graders.
        for _ in 0..jobs {
            let (tx, rx, ctx, permits) = (main_tx.clone(), &item_rx, &ctx, &permit_rx);
            scope.spawn(move || {
                loop {
                    if !matches!(permits.lock().map(|r| r.recv()), Ok(Ok(()))) {
                        break;
                    }
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok((i, item))) = next else { break };
                    let done = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| grade::grade(ctx, item)))
                    {
                        Ok(d) => d,
                        Err(_) => Done::Skipped(format!("item {i}: internal error in evalua while grading it")),
                    };
                    if tx.send(Msg::Graded(i, done)).is_err() {
                        break;
                    }
                }
                let _ = tx.send(Msg::WorkerDone);
            });
        }
        // Trace writers.
        for _ in 0..WRITERS {
            let (tx, rx, dir) = (main_tx.clone(), &store_rx, &dir);
            scope.spawn(move || {
                loop {
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok((seq, mut record, trace))) = next else { break };
                    if let Err(e) = dir.write_trace(&trace) {
                        record.error = Some(format!("could not write the trace: {e}"));
                    }
                    if tx.send(Msg::Stored(seq, record)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(main_tx);

        let mut store_tx = Some(store_tx);
        let mut graded: BTreeMap<usize, Done> = BTreeMap::new();
        let mut next_item = 0usize;
        let mut stored: BTreeMap<usize, Box<TrialRecord>> = BTreeMap::new();
        let (mut next_seq, mut next_write) = (0usize, 0usize);
        let mut workers_done = 0;
        for msg in &main_rx {
            match msg {
                Msg::WorkerDone => workers_done += 1,
                Msg::Graded(i, d) => {
                    graded.insert(i, d);
                    while let Some(d) = graded.remove(&next_item) {
                        next_item += 1;
                        let _ = permit_tx.try_send(());
                        match d {
                            Done::Skipped(w) => warnings.lock().map(|mut v| v.push(w)).unwrap_or(()),
                            Done::Graded(g) => {
                                let grade::Graded { mut record, mut trace, matched, warnings: ws } = *g;
                                if !ws.is_empty() {
                                    warnings.lock().map(|mut v| v.extend(ws)).unwrap_or(());
                                }
                                let ci = *case_index.entry(record.case.clone()).or_insert_with(|| {
                                    let spec =
                                        if matched { suite.cases.iter().find(|c| c.id == record.case) } else { None };
                                    infos.push(CaseInfo {
                                        id: record.case.clone(),
                                        weight: spec.map(|c| c.weight).unwrap_or(1.0),
                                        tags: spec.map(|c| c.tags.clone()).unwrap_or_default(),
                                        difficulty: spec.and_then(|c| c.difficulty.clone()),
                                    });
                                    trials_per_case.push(0);
                                    infos.len() - 1
                                });
                                trials_per_case[ci] += 1;
                                record.trial = trials_per_case[ci];
                                trace.trial = record.trial;
                                record.trace = crate::record::traces::PACK.to_string();
                                if let Some(tx) = &store_tx
                                    && tx.send((next_seq, Box::new(record), Box::new(trace))).is_err()
                                {
                                    failure.get_or_insert(Error::Environment("the trace writers stopped".into()));
                                }
                                next_seq += 1;
                            }
                        }
                    }
                }
                Msg::Stored(seq, record) => {
                    stored.insert(seq, record);
                    while let Some(r) = stored.remove(&next_write) {
                        next_write += 1;
                        if let Err(e) = writer.append(&r) {
                            failure.get_or_insert(e);
                        }
                        progress.inc(1);
                    }
                }
            }
            if workers_done == jobs && graded.is_empty() {
                // Every item is graded: the writers finish what they hold, then the loop ends.
                store_tx = None;
            }
        }
        match reader.join() {
            Ok(Ok(s)) => stats_out = s,
            Ok(Err(e)) => {
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert(Error::Environment("the trace reader failed (internal error)".into()));
            }
        }
    });
    progress.finish_and_clear();
    if let Some(e) = failure {
        return Err(e);
    }

    let warnings = std::mem::take(&mut *warnings.lock().map_err(|_| Error::Environment("warnings lost".into()))?);
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        super::json::warn(w.clone());
    }
    if warnings.len() > SHOWN_WARNINGS {
        eprintln!("warning: … and {} more (all listed in manifest.json)", warnings.len() - SHOWN_WARNINGS);
    }
    let graded: u32 = trials_per_case.iter().sum();
    man.cases = infos
        .iter()
        .zip(&trials_per_case)
        .map(|(i, n)| CaseEntry {
            id: i.id.clone(),
            trials: *n,
            revision: None,
            fixture_sha256: None,
            clock: String::new(),
            weight: i.weight,
            tags: i.tags.clone(),
            difficulty: i.difficulty.clone(),
            workdir: None,
            agent: None,
        })
        .collect();
    man.trace_inputs = stats_out;
    man.warnings = warnings;
    dir.write_manifest(&man)?;
    if graded == 0 {
        let inputs: Vec<String> = inputs.iter().map(|i| display_path(i.path())).collect();
        return Err(Error::Input(format!("{}: no item could be graded (see the warnings above)", inputs.join(", "))));
    }

    // The figures, from the run dir as written (the same as `evalua report`
    // computes); what grading kept per case is not needed any more.
    drop((man, infos, case_index, trials_per_case));
    let data = rundata::load(&dir.path)?;
    dir.write_json("summary.json", &data.summary_file())?;
    print!("{}", report::console(&suite.name, &data.summary, &data.gates, &dir.path.display().to_string()));
    report::write_all(&data)?;
    super::json::set("run", super::json::run_entry(&data));
    Ok(if data.gates_passed() { 0 } else { 1 })
}
