//! A run: plan the (case, trial) pairs, run them on `--jobs` worker threads,
//! and write the run dir as trials finish.
//!
//! Each worker writes its trial's trace the moment the trial ends; the main
//! thread appends records to trials.jsonl in plan order (a small reorder
//! buffer), so the file is identical for the same seed whatever `--jobs` is.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use serde_json::{Value as Json, json};

use crate::error::{Result, UserError};
use crate::executor::ToolDef;
use crate::gate::{self, Metric, Verdict};
use crate::lua::{display_path, host, sha256_hex};
use crate::record::{Outcome, TrialRecord};
use crate::sandbox::{self, DbImage};
use crate::stats::{self, CaseInfo, Summary, Tally};
use crate::suite::Suite;
use crate::trial::{self, CasePlan, Plan};

/// The trial deadline when the suite's budget sets none.
pub const DEFAULT_DEADLINE_S: f64 = 300.0;

#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub case: Option<String>,
    pub tags: Vec<String>,
    pub split: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub trials: Option<u32>,
    pub jobs: usize,
    pub filters: Filters,
    pub seed: u64,
    pub progress: bool,
    /// `--partition hash:I/N`: run only this share of the (case, trial) pairs.
    pub partition: Option<crate::partition::Partition>,
}

/// Select the cases, build each case's template database and compile the
/// tools' schemas: everything that can be wrong with the suite fails here,
/// before any agent runs.
pub fn plan(suite: Suite, trials: Option<u32>, filters: &Filters, seed: u64) -> Result<Plan> {
    let glob = match &filters.case {
        Some(g) => Some(globset::Glob::new(g).map_err(|e| UserError(format!("--case {g:?}: {e}")))?.compile_matcher()),
        None => None,
    };
    let now = jiff::Timestamp::now();
    let default_clock = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);

    let mut tools: HashMap<String, Arc<ToolDef>> = HashMap::new();
    for t in &suite.tools {
        let validator = host::compile_schema(&t.params).map_err(|e| UserError(format!("tool '{}': {e}", t.name)))?;
        tools.insert(t.name.clone(), Arc::new(ToolDef { spec: t.clone(), validator }));
    }

    let scratch = tempfile::Builder::new()
        .prefix("evalua-run-")
        .tempdir()
        .map_err(|e| UserError(format!("cannot create a temp dir for the trials' work dirs: {e}")))?;
    let mut work_templates = crate::workdir::Templates::default();
    let mut templates: HashMap<(Option<PathBuf>, Option<PathBuf>), DbImage> = HashMap::new();
    let mut cases = Vec::new();
    for spec in &suite.cases {
        if glob.as_ref().is_some_and(|g| !g.is_match(&spec.id)) {
            continue;
        }
        if !filters.tags.is_empty() && !filters.tags.iter().any(|t| spec.tags.contains(t)) {
            continue;
        }
        if filters.split.as_ref().is_some_and(|s| s != &spec.split) {
            continue;
        }
        let key = (suite.schema.clone(), spec.fixture.clone());
        let template = if key.0.is_none() && key.1.is_none() {
            None
        } else if let Some(t) = templates.get(&key) {
            Some(t.clone())
        } else {
            let files: Vec<&Path> = key.0.iter().chain(key.1.iter()).map(|p| p.as_path()).collect();
            let image = sandbox::build_template(&files)
                .map_err(|e| UserError(format!("{} (case '{}' at {})", e.0, spec.id, spec.location)))?;
            templates.insert(key, image.clone());
            Some(image)
        };
        let clock_text =
            spec.clock.clone().or_else(|| suite.clock.clone()).unwrap_or_else(|| default_clock.to_string());
        let clock =
            host::instant(&clock_text, "UTC").map_err(|e| UserError(format!("case '{}': clock: {e}", spec.id)))? as i64;
        let offered: Vec<Arc<ToolDef>> = match &spec.tools {
            Some(names) => names.iter().filter_map(|n| tools.get(n).cloned()).collect(),
            None => suite.tools.iter().filter_map(|t| tools.get(&t.name).cloned()).collect(),
        };
        let work = match suite.case_workdir(spec) {
            Some(w) => Some(
                work_templates
                    .get(w, scratch.path())
                    .map_err(|e| UserError(format!("{} (case '{}' at {})", e.0, spec.id, spec.location)))?,
            ),
            None => None,
        };
        cases.push(CasePlan {
            work,
            trials: trials.or(spec.trials).unwrap_or(suite.trials),
            spec: spec.clone(),
            template,
            tools: offered,
            clock,
            clock_text,
        });
    }
    if cases.is_empty() {
        return Err(UserError(format!(
            "{}: no case matches the filters (case={:?}, tag={:?}, split={:?}); `evalua list` shows the cases",
            display_path(&suite.path),
            filters.case,
            filters.tags,
            filters.split
        )));
    }
    static PLANS: AtomicU64 = AtomicU64::new(1);
    let id = PLANS.fetch_add(1, Ordering::Relaxed);
    Ok(Plan { id, suite, cases, seed, scratch, invalid: Vec::new() })
}

/// What a finished run produced.
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
    pub gates: Vec<Verdict>,
    pub run_id: String,
}

impl RunResult {
    pub fn gates_passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }
}

/// `<UTC time>-<6 hex>`: sortable by time, unique enough for a folder name.
pub fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let t = jiff::fmt::strtime::format("%Y%m%dT%H%M%SZ", &now.to_zoned_datetime(jiff::tz::TimeZone::UTC))
        .unwrap_or_default();
    format!("{t}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Create the run dir: `--out` exactly, or `runs/<suite>/<time>-<id>/`.
pub fn make_run_dir(out: Option<&Path>, suite: &str, run_id: &str) -> Result<PathBuf> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("runs").join(suite).join(run_id),
    };
    if dir.exists() && fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(false) {
        return Err(UserError(format!("{}: the run dir exists and is not empty; choose another --out", dir.display())));
    }
    fs::create_dir_all(dir.join("traces")).map_err(|e| UserError(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

/// Threads that write trace files (see `execute`).
const TRACE_WRITERS: usize = 2;

/// Split the work (in plan order) into the runs of trials a worker claims at
/// once: consecutive trials of one case, about an eighth of a worker's share.
/// A worker that runs a case's trials back to back evaluates the suite once
/// for them (see `lua::reuse`); small runs still spread trial by trial.
fn chunks(work: &[(usize, u32)], jobs: usize) -> Vec<std::ops::Range<usize>> {
    let size = (work.len() / (jobs * 8)).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=work.len() {
        if i == work.len() || work[i].0 != work[start].0 || i - start == size {
            out.push(start..i);
            start = i;
        }
    }
    out
}

/// Run every planned trial and write the run dir.
pub fn execute(plan: &Plan, opts: &RunOptions, dir: &Path, run_id: &str, argv: &[String]) -> Result<RunResult> {
    let work: Vec<(usize, u32)> = plan
        .cases
        .iter()
        .enumerate()
        .flat_map(|(i, c)| (1..=c.trials).map(move |t| (i, t)))
        .filter(|&(i, t)| opts.partition.is_none_or(|p| p.contains(&plan.cases[i].spec.id, t)))
        .collect();
    write_json(&dir.join("manifest.json"), &manifest(plan, opts, run_id, argv))?;

    let mut jsonl = File::create(dir.join("trials.jsonl")).map_err(|e| UserError(format!("trials.jsonl: {e}")))?;
    let mut tally = Tally::new(plan.cases.len());
    let progress = progress_bar(work.len() as u64, opts.progress);

    let jobs = opts.jobs.max(1).min(work.len().max(1));
    let chunks = chunks(&work, jobs);
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::sync_channel::<(usize, TrialRecord)>(1024);
    // Creating a file can block on the disk's journal for far longer than a
    // trial takes to compute, so traces are written by their own threads: a
    // worker hands over the serialised trace and goes on with its next trial.
    let (trace_tx, trace_rx) = mpsc::sync_channel::<(usize, TrialRecord, Vec<u8>)>(256);
    let trace_rx = std::sync::Mutex::new(trace_rx);
    let mut write_error: Option<String> = None;
    std::thread::scope(|scope| {
        for _ in 0..TRACE_WRITERS {
            let (tx, trace_rx) = (tx.clone(), &trace_rx);
            scope.spawn(move || {
                loop {
                    let next = trace_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((i, mut record, bytes))) = next else { break };
                    // The trace is on disk before the record is announced.
                    if let Err(e) = fs::write(dir.join(&record.trace), bytes) {
                        record.error = Some(format!("could not write the trace: {e}"));
                    }
                    if tx.send((i, record)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for _ in 0..jobs {
            let tx = trace_tx.clone();
            let (work, next, chunks) = (&work, &next, &chunks);
            scope.spawn(move || {
                let mut mine = 0..0;
                loop {
                    let i = match mine.next() {
                        Some(i) => i,
                        None => match chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                            Some(c) => {
                                mine = c.clone();
                                continue;
                            }
                            None => break,
                        },
                    };
                    let (case_idx, number) = work[i];
                    let case = &plan.cases[case_idx];
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| trial::run(plan, case, number)));
                    let mut out = match out {
                        Ok(o) => o,
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                            trial::internal_error(plan, case, number, msg.unwrap_or_else(|| "panic".into()))
                        }
                    };
                    let bytes = match serde_json::to_vec_pretty(&out.trace) {
                        Ok(b) => b,
                        Err(e) => {
                            out.record.error = Some(format!("could not write the trace: {e}"));
                            Vec::new()
                        }
                    };
                    if tx.send((i, out.record, bytes)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(trace_tx);
        let mut pending: BTreeMap<usize, TrialRecord> = BTreeMap::new();
        let mut written = 0usize;
        for (i, rec) in rx {
            pending.insert(i, rec);
            while let Some(rec) = pending.remove(&written) {
                let case_idx = work[written].0;
                let line = serde_json::to_string(&rec).unwrap_or_default();
                if let Err(e) = writeln!(jsonl, "{line}").and_then(|_| jsonl.flush()) {
                    write_error.get_or_insert(e.to_string());
                }
                tally.add(case_idx, &rec);
                progress.inc(1);
                if rec.outcome != Outcome::Accepted {
                    progress.set_message(format!("{} {}#{}", rec.outcome.as_str(), rec.case, rec.trial));
                }
                written += 1;
            }
        }
    });
    progress.finish_and_clear();
    if let Some(e) = write_error {
        return Err(UserError(format!("{}: cannot write trials.jsonl: {e}", dir.display())));
    }

    let infos = case_infos(plan);
    let summary = stats::summarize(&infos, &tally, plan.seed);
    let gates = decide_gates(plan, &summary);
    write_summary(dir, plan, run_id, &summary, &gates)?;
    Ok(RunResult { dir: dir.to_path_buf(), summary, gates, run_id: run_id.to_string() })
}

pub fn case_infos(plan: &Plan) -> Vec<CaseInfo> {
    plan.cases
        .iter()
        .map(|c| CaseInfo {
            id: c.spec.id.clone(),
            weight: c.spec.weight,
            tags: c.spec.tags.clone(),
            difficulty: c.spec.difficulty.clone(),
        })
        .collect()
}

fn progress_bar(total: u64, show: bool) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb
}

/// The point value and interval of a gate's figure.
pub fn gate_figure(summary: &Summary, metric: Metric) -> (Option<f64>, Option<(f64, f64)>) {
    let f = &summary.figures;
    let iv = |key: &str| f.capability.intervals.get(key).map(|i| (i.lower, i.upper));
    let count = |n: u32| (Some(n as f64), Some((n as f64, n as f64)));
    match metric {
        Metric::PassHat(k) => (f.capability.pass_hat_k.get(&k.to_string()).copied(), iv(&format!("pass^{k}"))),
        Metric::PassAt(k) => (f.capability.pass_at_k.get(&k.to_string()).copied(), iv(&format!("pass@{k}"))),
        Metric::Accepted => (f.capability.accepted_rate, iv("accepted")),
        Metric::CriticalFailures => count(f.critical_failures),
        Metric::GraderErrors => count(f.grader_errors),
        Metric::InfraErrors => count(f.infra_errors),
        Metric::SkippedChecks => count(f.skipped_checks),
        Metric::CostPerAccepted => {
            (Some(f.cost_per_accepted_usd.unwrap_or(f64::INFINITY)), iv("cost_per_accepted_usd"))
        }
        Metric::P50Ms => (f.p50_ms, None),
        Metric::P95Ms => (f.p95_ms, None),
    }
}

fn decide_gates(plan: &Plan, summary: &Summary) -> Vec<Verdict> {
    plan.suite
        .gates
        .iter()
        .map(|g| {
            let (point, interval) = gate_figure(summary, g.metric);
            gate::decide(g, point, interval)
        })
        .collect()
}

pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    fs::write(path, bytes).map_err(|e| UserError(format!("{}: {e}", path.display())))
}

fn write_summary(dir: &Path, plan: &Plan, run_id: &str, summary: &Summary, gates: &[Verdict]) -> Result<()> {
    let v = summary_json(&plan.suite.name, plan.suite.version.as_deref(), run_id, plan.seed, summary, gates);
    write_json(&dir.join("summary.json"), &v)
}

/// summary.json: the figures plus the run's identity and the gates' verdicts.
pub fn summary_json(
    suite: &str,
    version: Option<&str>,
    run_id: &str,
    seed: u64,
    summary: &Summary,
    gates: &[Verdict],
) -> Json {
    let mut v = serde_json::to_value(summary).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("suite".into(), json!(suite));
        obj.insert("version".into(), json!(version));
        obj.insert("run_id".into(), json!(run_id));
        obj.insert("seed".into(), json!(seed));
        obj.insert("gates".into(), serde_json::to_value(gates).unwrap_or_default());
    }
    v
}

fn file_hash(p: &Path) -> Json {
    match fs::read(p) {
        Ok(b) => json!({ "path": display_path(p), "sha256": sha256_hex(&b) }),
        Err(e) => json!({ "path": display_path(p), "error": e.to_string() }),
    }
}

fn manifest(plan: &Plan, opts: &RunOptions, run_id: &str, argv: &[String]) -> Json {
    let suite = &plan.suite;
    let sources = plan.suite.sources.all();
    let grader_hash = sha256_hex(
        sources
            .iter()
            .map(|s| format!("{}:{}", s.display, s.sha256))
            .chain(crate::lua::STDLIB.iter().map(|(n, _, src)| format!("{n}:{}", sha256_hex(src.as_bytes()))))
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes(),
    );
    let tools_hash = sha256_hex(serde_json::to_string(&suite.tools).unwrap_or_default().as_bytes());
    let mut fixture_hashes: HashMap<PathBuf, Option<String>> = HashMap::new();
    let cases: Vec<Json> = plan
        .cases
        .iter()
        .map(|c| {
            let fixture_sha = c.spec.fixture.as_ref().and_then(|p| {
                fixture_hashes.entry(p.clone()).or_insert_with(|| fs::read(p).ok().map(|b| sha256_hex(&b))).clone()
            });
            let revision = sha256_hex(
                format!(
                    "{}\n{:?}\n{}{}",
                    serde_json::to_string(&c.spec).unwrap_or_default(),
                    fixture_sha,
                    c.clock_text,
                    c.work.as_ref().map(|w| format!("\n{}", w.hash)).unwrap_or_default()
                )
                .as_bytes(),
            );
            let mut case = json!({ "id": c.spec.id, "trials": c.trials, "revision": revision, "fixture_sha256": fixture_sha, "clock": c.clock_text,
                    "weight": c.spec.weight, "tags": c.spec.tags, "difficulty": c.spec.difficulty });
            if let Some(w) = &c.work {
                case["workdir"] = json!({ "source": w.spec, "tree_sha256": w.hash, "files": w.files });
            }
            case
        })
        .collect();
    let agent = suite.agent.as_ref().map(|a| {
        let mut v = serde_json::to_value(a).unwrap_or_default();
        if let crate::suite::AgentSpec::Scripted { path: Some(p) } = a {
            v["file"] = file_hash(p);
        }
        v
    });
    json!({
        "evalua_version": env!("CARGO_PKG_VERSION"),
        "run_id": run_id,
        "started_at": jiff::Timestamp::now().to_string(),
        "command": argv,
        "suite": {
            "name": suite.name,
            "version": suite.version,
            "path": display_path(&suite.path),
            "sha256": fs::read(&suite.path).map(|b| sha256_hex(&b)).unwrap_or_default(),
            "schema": suite.schema.as_deref().map(file_hash),
        },
        "sources": sources.iter().map(|s| json!({ "path": s.display, "sha256": s.sha256 })).collect::<Vec<_>>(),
        "grader_sha256": grader_hash,
        "tool_contract_sha256": tools_hash,
        "agent": agent,
        "judges": crate::judge::manifest(suite),
        "cases": cases,
        "budget": plan.suite.budget,
        "default_deadline_s": DEFAULT_DEADLINE_S,
        "trials": opts.trials,
        "seed": plan.seed,
        "partition": opts.partition.map(|p| p.to_string()),
        "jobs": opts.jobs,
        "filters": { "case": opts.filters.case, "tags": opts.filters.tags, "split": opts.filters.split },
        "gates": suite.gates.iter().map(|g| json!({ "name": g.name, "threshold": g.threshold, "on": g.on })).collect::<Vec<_>>(),
        "invalid_cases": plan.invalid,
        "infra_error_policy": "capability figures leave infra_error trials out of n; figures.operational counts them as failures",
        "machine": {
            "os": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "hostname": fs::read_to_string("/etc/hostname").map(|s| s.trim().to_string()).unwrap_or_default(),
        },
    })
}
