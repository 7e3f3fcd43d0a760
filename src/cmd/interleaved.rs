//! `evalua run SUITE --agent A --agent B …`: one run of several of the suite's
//! named agents, interleaved block by block (`run::interleave`). The run dir
//! holds interleaved.json (what the run is), blocks.jsonl (each block's
//! order and each agent's trial in brief), the side-by-side summary.json,
//! report.md and report.html, and `agents/<name>/`: each agent's part, a run
//! dir like any other (`evalua report`, `show`, `compare`, `regrade` and
//! `view` read it as such).

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::record::files;
use crate::record::interleaved::InterleavedManifest;
use crate::record::manifest::{AdaptiveDesign, GateEntry, InterleavedEntry};
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::interleaved;
use crate::report::{self, sinks};
use crate::run::adaptive::PairedRounds;
use crate::run::interleave::{BlocksFile, Interleaved, PartDirs, Router};
use crate::run::{AsMade, RunOptions, Scheduler, Sink};
use crate::stats::rundata;
use crate::trial::Plan;
use crate::util::cancel;
use crate::util::paths::display_path;

/// Run `plan` once per condition (two or more of the suite's named agents,
/// already checked; or the baseline and the perturbations `--perturb`
/// chose), interleaved; write the run dir (under `out`) and its reports,
/// print the side-by-side summary, and return the exit code.
pub(crate) fn run(
    plan: Plan,
    opts: &RunOptions,
    follow: &sinks::Follow,
    out: Option<PathBuf>,
    allow_incomplete: bool,
    adaptive: Option<AdaptiveDesign>,
) -> Result<u8> {
    let argv = super::flags::argv();
    let parts: Vec<String> = plan.conditions.iter().map(|c| plan.part_name(c)).collect();
    let perturbations: Vec<String> = plan.conditions.iter().filter_map(|c| c.perturbation.clone()).collect();
    let agents: Vec<String> = if perturbations.is_empty() { parts.clone() } else { Vec::new() };
    if opts.partition.is_some() {
        return Err(Error::Input(
            "--partition: an interleaved run (several --agent) runs in one process; partition single-agent runs".into(),
        ));
    }
    let run_id = new_run_id();
    let top = out.unwrap_or_else(|| PathBuf::from("runs").join(&plan.suite.name).join(&run_id));
    // Created (and refused when it holds anything) like any run dir; it holds no trace of its own.
    let top_dir = RunDir::create(Some(&top), &plan.suite.name, &run_id)?;
    let _ = std::fs::remove_dir(top_dir.path.join(files::TRACES_DIR));
    let mut manifest = top_manifest(&plan, opts, &run_id, &argv, agents.clone(), perturbations.clone());
    manifest.adaptive = adaptive.clone();
    manifest.write(&top)?;

    // Each part: a run dir with its own manifest (its agent, its perturbation named).
    let mut dirs = Vec::new();
    for (c, name) in parts.iter().enumerate() {
        let dir = RunDir::create(Some(&manifest.part_dir(&top, name)), &plan.suite.name, &run_id)?;
        let mut m = crate::run::manifest::build_for(&plan, c, opts, &format!("{run_id}-{name}"), &argv);
        // A case's own perturbation runs for that case only: its part plans that case alone.
        m.cases.retain(|e| plan.ids.get(&e.id).is_some_and(|&i| plan.applies(i, c)));
        m.planned_trials = Some(crate::run::work(&plan, None).iter().filter(|(i, _)| plan.applies(*i, c)).count());
        m.interleaved = Some(InterleavedEntry {
            run_id: run_id.clone(),
            agents: agents.clone(),
            perturbations: perturbations.clone(),
            perturbation: plan.conditions[c].perturbation.clone(),
        });
        m.exports.extend(follow.export.entries(&plan.suite.name));
        dir.write_manifest(&m)?;
        dirs.push((name.clone(), dir));
    }
    let plan = Arc::new(plan);

    // Each agent's sinks see its own trials; the progress display and blocks.jsonl see all.
    let quiet = sinks::Follow { quiet: true, export: follow.export.clone() };
    let mut followers = Vec::new();
    for (name, dir) in &dirs {
        followers.push(sinks::Followers::new(&quiet, dir, &plan.suite.name, &format!("{run_id}-{name}"), None)?);
    }
    let mut progress = sinks::Progress::new(!follow.quiet);
    let part_dirs: Vec<(String, RunDir)> = dirs.iter().map(|(n, d)| (n.clone(), d.clone())).collect();
    let executed = {
        let own: Vec<Vec<&mut dyn Sink>> = followers.iter_mut().map(|f| f.sinks().into_iter().collect()).collect();
        let store = PartDirs { plan: plan.clone(), dirs };
        match &adaptive {
            None => {
                let source = Arc::new(Interleaved::new(&plan, None, opts.jobs));
                let mut blocks = BlocksFile::create(&top, &plan, &source)?;
                let mut router =
                    Router { source: &*source, own, common: vec![&mut progress as &mut dyn Sink, &mut blocks] };
                Scheduler::new(opts.jobs).execute(&store, source.clone(), &mut AsMade, &mut [&mut router])?
            }
            Some(d) => {
                // Blocks in rounds (SPEC §20): each part's trials are known once the rounds end.
                let source = Arc::new(PairedRounds::new(&plan, d));
                let mut blocks = BlocksFile::lazy(&top, &plan)?;
                let mut router =
                    Router { source: &*source, own, common: vec![&mut progress as &mut dyn Sink, &mut blocks] };
                let executed =
                    Scheduler::new(opts.jobs).execute(&store, source.clone(), &mut AsMade, &mut [&mut router])?;
                if executed.complete() {
                    settle_parts(&part_dirs)?;
                }
                executed
            }
        }
    };
    drop(progress);
    drop(plan);
    let mut exports = Vec::new();
    for f in followers {
        exports.extend(f.finish().exports);
    }
    crate::util::memory::release_free();

    // Each part's figures and reports, from its run dir alone.
    for name in &parts {
        let mut data = rundata::load_with(&manifest.part_dir(&top, name), allow_incomplete)?;
        crate::record::rundir::write_json(&data.dir.join(files::SUMMARY), &data.summary_file())?;
        data.summary_present = true;
        report::write_all(&data)?;
    }
    let run = crate::stats::interleaved::Interleaved::load(&top, allow_incomplete)?;
    interleaved::write_all(&run)?;
    print!("{}", interleaved::console(&run));
    for l in &exports {
        println!("{l}");
    }
    println!("report: {}", display_path(&top.join(files::REPORT_HTML)));
    println!("report: {}", display_path(&top.join(files::REPORT_MD)));
    let stopped = cancel::requested() || !executed.complete();
    Ok(if run.gates_passed() && !stopped { 0 } else { 1 })
}

/// An adaptive run that reached its end: each part planned the trials it recorded.
fn settle_parts(dirs: &[(String, RunDir)]) -> Result<()> {
    for (_, dir) in dirs {
        let mut m = dir.read_manifest()?;
        m.planned_trials = Some(crate::run::resume::read_lines(dir)?.0.len());
        dir.write_manifest(&m)?;
    }
    Ok(())
}

/// interleaved.json of a run of `plan`'s conditions: its agents, or its perturbations.
fn top_manifest(
    plan: &Plan,
    opts: &RunOptions,
    run_id: &str,
    argv: &[String],
    agents: Vec<String>,
    perturbations: Vec<String>,
) -> InterleavedManifest {
    InterleavedManifest {
        kind: "interleaved".into(),
        format: files::FORMAT,
        run_id: run_id.to_string(),
        suite: plan.suite.name.clone(),
        started_at: jiff::Timestamp::now().to_string(),
        command: argv.to_vec(),
        agents,
        perturbations,
        seed: plan.seed,
        jobs: opts.jobs,
        blocks: crate::run::work(plan, None).len(),
        order: "each block's conditions run back to back on one worker, from the block's seed; their order rotates \
                from block to block (two alternate), where it starts drawn from the seed"
            .into(),
        gates: plan
            .suite
            .gates
            .iter()
            .map(|g| GateEntry { name: g.name.clone(), threshold: g.threshold, on: g.on })
            .collect(),
        adaptive: None,
    }
}
