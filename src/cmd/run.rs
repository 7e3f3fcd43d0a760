//! `evalua run`: load and plan every suite first (a bad one stops the run
//! before any agent starts), then run each, write its run dir and reports,
//! and decide its gates. With `--resume` / `--retry-errors`, continue an
//! interrupted run dir instead of starting a new one (see `run::resume`).
//!
//! The first SIGINT / SIGTERM stops taking trials; the running ones end as
//! `interrupted`; the summary and reports are still written, marked
//! incomplete (`util::cancel`). A second signal exits at once.

use crate::record::files;
use std::collections::HashSet;
use std::path::PathBuf;

use super::flags;
use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::ledger;
use crate::record::manifest::Filters;
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::{self, compare, sinks};
use crate::run::partition::Resolved;
use crate::run::resume::{self, Mode};
use crate::run::{self, Partition, PartitionArg, RunOptions, Scheduler};
use crate::spec::gate;
use crate::stats::{RunData, rundata};
use crate::util::cancel;
use crate::util::paths::display_path;

/// `evalua run`'s flags, as parsed (main.rs embeds this struct in its command enum).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub machine: flags::Machine,
    #[arg(required = true, value_name = "SUITE.lua")]
    pub suites: Vec<PathBuf>,
    /// Trials per case (overrides the suite and the cases)
    #[arg(long, value_parser = flags::positive)]
    pub trials: Option<u32>,
    #[command(flatten)]
    pub jobs: flags::Jobs,
    #[command(flatten)]
    pub select: flags::Select,
    /// Run seed: the same seed gives the same trial seeds [default: 1]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the run dir here (default runs/<suite>/<time>-<id>/)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "retry_errors"])]
    pub out: Option<PathBuf>,
    /// Finish an interrupted run: keep the trials in RUN_DIR/trials.jsonl, run the rest with the same seeds
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "retry_errors")]
    pub resume: Option<PathBuf>,
    /// As --resume, and also run the run's infra_error trials again
    #[arg(long, value_name = "RUN_DIR")]
    pub retry_errors: Option<PathBuf>,
    /// On an incomplete run (interrupted), decide the gates on the trials that ran instead of failing them
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Skip (and report) cases whose tests do not hold on their initial tree instead of failing
    #[arg(long)]
    pub skip_invalid: bool,
    /// Run only this deterministic share of the (case, trial) pairs: hash:I/N (e.g. hash:1/4), or auto
    /// (from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX + EVALUA_PARTITIONS, or EVALUA_PARTITION=I/N)
    #[arg(long, value_name = "hash:I/N|auto", value_parser = PartitionArg::parse)]
    pub partition: Option<PartitionArg>,
    /// Compare the finished run with this earlier run dir (as `evalua compare`)
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: compare even if the suite or its cases changed
    #[arg(long)]
    pub allow_revision_change: bool,
    #[command(flatten)]
    pub no_cache: flags::NoCache,
    /// A skipped judge check (no judge model reachable) fails the run
    #[arg(long)]
    pub require_judge: bool,
    /// Do not keep each trial's changes (database changeset, changed files); the run cannot be re-graded
    #[arg(long)]
    pub no_state: bool,
    #[command(flatten)]
    pub isolation: flags::Isolation,
    #[command(flatten)]
    pub follow: flags::Follow,
    /// Which of the suite's agents plays (`agents = { NAME = … }`; default: the suite's default agent);
    /// repeated (`--agent A --agent B`), one run interleaving them block by block
    #[arg(long, value_name = "NAME")]
    pub agent: Vec<String>,
    /// First play `evalua harden`'s adversaries against the cases (as the suite's `gate = { hardened = true }`
    /// does): the holes are listed and recorded in the manifest, and any hole fails the run (exit 1)
    #[arg(long)]
    pub harden: bool,
    /// Run the baseline and the suite's perturbations (SPEC §17), interleaved block by block: every one
    /// (`--perturb` alone, after the suite) or those named (`--perturb NAME`, repeatable)
    #[arg(long, value_name = "NAME", num_args = 0..)]
    pub perturb: Option<Vec<String>>,
    /// Run trials in rounds until every pass^1 / accepted gate is decided by an anytime-valid 95% sequence
    /// (SPEC §20): every case its min, then more where the outcome is most uncertain, none past its max
    /// (the suite's `trials = { min, max }`; else min 2 and max the planned trials)
    #[arg(long)]
    pub adaptive: bool,
}

/// Say on stderr which dataset rows `on_error = "skip"` left out.
pub fn warn_skipped_rows(suite: &crate::spec::Suite) {
    for d in suite.datasets.iter().filter(|d| d.skipped > 0) {
        super::json::warn(format!("{}: {} of {} rows skipped as bad (on_error = \"skip\")", d.path, d.skipped, d.rows));
        for why in &d.skipped_rows {
            eprintln!("  {}", crate::util::inert::console(why));
        }
        if d.skipped as usize > d.skipped_rows.len() {
            eprintln!("  … and {} more", d.skipped as usize - d.skipped_rows.len());
        }
    }
}

/// The run dir to continue, and how.
fn continuing(a: &RunArgs) -> Option<(&PathBuf, Mode)> {
    match (&a.resume, &a.retry_errors) {
        (Some(d), _) => Some((d, Mode::Resume)),
        (None, Some(d)) => Some((d, Mode::RetryErrors)),
        _ => None,
    }
}

/// The flags of a continued run: each flag not given on the command line is
/// the run dir's own; one given must agree with it (checked with the rest of
/// the manifest by `resume::prepare`).
///
/// `--partition auto` reads the engine's variables here, before anything runs.
fn flags_of(a: &RunArgs) -> Result<(Option<u32>, u64, Filters, Option<Resolved>, Option<String>)> {
    let a_filters = a.select.filters();
    let given = match a.partition {
        Some(p) => Some(p.resolve(&|name| std::env::var(name).ok()).map_err(Error::Input)?),
        None => None,
    };
    let Some((dir, mode)) = continuing(a) else {
        return Ok((a.trials, a.seed.unwrap_or(1), a_filters, given, one_agent(a)));
    };
    if a.suites.len() != 1 {
        return Err(Error::Input(format!("{}: give the one suite of the run dir", mode.flag())));
    }
    let m = RunDir::open(dir)?.read_manifest()?;
    let partition = match (given, &m.partition) {
        (Some(p), _) => Some(p),
        (None, Some(p)) => Some(Resolved {
            partition: Partition::parse(p)
                .map_err(|e| Error::Input(format!("{}: manifest.json: partition {p:?}: {e}", dir.display())))?,
            source: m.partition_from.clone(),
        }),
        (None, None) => None,
    };
    let filters = if a_filters == Filters::default() { m.filters.clone() } else { a_filters };
    // The run's named agent, unless the command line names one (the manifest check then compares them).
    let agent = one_agent(a).or_else(|| m.agent.and_then(|a| a.name));
    Ok((a.trials.or(m.trials), a.seed.unwrap_or(m.seed), filters, partition, agent))
}

/// The one `--agent` given (several make an interleaved run: `interleaved_agents`).
fn one_agent(a: &RunArgs) -> Option<String> {
    (a.agent.len() == 1).then(|| a.agent[0].clone())
}

/// Two or more `--agent`: their names, checked (each once; one suite; not
/// with the flags an interleaved run cannot honour yet).
fn interleaved_agents(a: &RunArgs) -> Result<Option<Vec<String>>> {
    if a.agent.len() < 2 {
        return Ok(None);
    }
    for (i, n) in a.agent.iter().enumerate() {
        if a.agent[..i].contains(n) {
            return Err(Error::Input(format!("--agent {n} is given twice: name each agent once")));
        }
    }
    if a.suites.len() != 1 {
        return Err(Error::Input("--agent A --agent B: an interleaved run is of one suite; give one".into()));
    }
    let refuse = |flag: &str, why: &str| Err(Error::Input(format!("{flag}: {why}")));
    if a.resume.is_some() || a.retry_errors.is_some() {
        return refuse(
            "--resume / --retry-errors",
            "an interleaved run (several --agent) cannot be continued yet; run it again",
        );
    }
    if a.partition.is_some() {
        return refuse(
            "--partition",
            "an interleaved run (several --agent) runs in one process; partition single-agent runs",
        );
    }
    if a.baseline.is_some() {
        return refuse(
            "--baseline",
            "an interleaved run (several --agent) compares its agents with each other; compare one agent's part (agents/NAME) with `evalua compare`",
        );
    }
    Ok(Some(a.agent.clone()))
}

/// The perturbations `--perturb` asks for (empty: every one), with the
/// flags a run of perturbations cannot take refused.
fn perturbations(a: &RunArgs) -> Result<Option<Vec<String>>> {
    let Some(names) = &a.perturb else { return Ok(None) };
    let refuse = |flag: &str, why: &str| Err(Error::Input(format!("--perturb with {flag}: {why}")));
    if a.agent.len() > 1 {
        return refuse(
            "several --agent",
            "a run compares either agents or perturbations; run the perturbations once per agent (--agent NAME --perturb)",
        );
    }
    if a.suites.len() != 1 {
        return refuse("several suites", "a run of perturbations is of one suite; give one");
    }
    if a.resume.is_some() || a.retry_errors.is_some() {
        return refuse("--resume / --retry-errors", "a run of perturbations cannot be continued yet; run it again");
    }
    if a.partition.is_some() {
        return refuse("--partition", "a run of perturbations runs in one process");
    }
    if a.baseline.is_some() {
        return refuse("--baseline", "a run of perturbations compares each with its own baseline trials");
    }
    Ok(Some(names.clone()))
}

pub fn run(a: RunArgs) -> Result<u8> {
    let switches = flags::switches(&a.isolation, &a.no_cache);
    let follow = a.follow.options()?;
    let (jobs, argv) = (a.jobs.get(), flags::argv());
    if let Err(e) = cancel::install_signal_handlers() {
        eprintln!("warning: cannot handle SIGINT/SIGTERM ({e}): an interrupted run will have no summary");
    }
    let many = a.suites.len() > 1;
    let interleaved = interleaved_agents(&a)?;
    let perturbed = perturbations(&a)?;
    let (trials, seed, filters, partition, agent) = flags_of(&a)?;
    let mut plans = Vec::new();
    for path in &a.suites {
        // What `evalua check` refuses, a run refuses before any trial, with the
        // same lines: the suite's mistakes, and a command agent whose program or
        // script its sandbox would not find (for each agent the run picks).
        let (s, mut errors) = load::load_checked(path)?;
        let picks: Vec<Option<&str>> = match &interleaved {
            Some(names) => names.iter().map(|n| Some(n.as_str())).collect(),
            None => vec![agent.as_deref()],
        };
        for pick in picks {
            errors.extend(run::screen::agent_programs(&s, switches.isolation, pick));
        }
        if !errors.is_empty() {
            return Err(load::errors_of(errors));
        }
        if let Some(why) = &s.skip {
            // e.g. a model-driven suite with no model configured: not a failure.
            println!("skipped: {}: {why}", display_path(&s.path));
            super::json::push("skipped", serde_json::json!({ "suite": display_path(&s.path), "reason": why }));
            continue;
        }
        if partition.is_some()
            && s.clock.is_none()
            && let Some(case) = s.cases.iter().find(|c| c.clock.is_none())
        {
            // The default clock is the run's start: each part's would differ,
            // so would the cases' revisions, and merge would refuse the parts.
            return Err(Error::Input(format!(
                "{}: --partition: the suite sets no sandbox.clock (nor case '{}' a clock of its own), so each part would start its clock at its own start time and `evalua merge` would refuse the parts; set sandbox.clock",
                display_path(&s.path),
                case.id
            )));
        }
        warn_skipped_rows(&s);
        let mut plan = run::plan(s, trials, &filters, seed)?;
        match &interleaved {
            // Each agent of an interleaved run must be able to run (known, its endpoint configured).
            Some(agents) => {
                run::check_agent(&plan, agent.as_deref())?;
                run::select_agents(&mut plan, agents)?;
            }
            None => run::select_agent(&mut plan, agent.as_deref())?,
        }
        if let Some(names) = &perturbed {
            run::perturb::select(&mut plan, names)?;
        }
        plan.keep_state &= !a.no_state;
        plan.switches = switches;
        run::screen::require_sandbox(&plan)?;
        run::screen::screen(&mut plan, a.skip_invalid, jobs)?;
        let design = adaptive_design(&a, &plan, trials, interleaved.is_some() || perturbed.is_some())?;
        plans.push((plan, design));
    }
    let baseline = match &a.baseline {
        Some(b) if many => {
            return Err(Error::Input(format!("--baseline {}: give one suite with --baseline", b.display())));
        }
        Some(b) => Some(compare::preflight(b, &a.suites[0], a.allow_revision_change)?),
        None => None,
    };
    let mut code = 0;
    // Each suite with safety figures, what pools them (several suites): only
    // what `safety::pooled` reads, not the whole summary.
    let mut pooled: Vec<SafetyPart> = Vec::new();
    for (mut plan, design) in plans {
        if cancel::requested() {
            println!("not run (the run was stopped): {}", display_path(&plan.suite.path));
            super::json::push(
                "skipped",
                serde_json::json!({ "suite": display_path(&plan.suite.path), "reason": "the run was stopped" }),
            );
            code = 1;
            continue;
        }
        if a.require_judge {
            plan.suite.gates.push(gate::require_judge());
        }
        for w in crate::judge::calibration_warnings(&plan.suite) {
            super::json::warn(w);
        }
        let hardened = harden_first(&a, &plan, &filters, seed, switches, jobs)?;
        let holes = hardened.as_ref().is_some_and(|h| super::harden::code(h) != 0);
        let opts = RunOptions {
            trials,
            jobs,
            filters: filters.clone(),
            seed,
            partition: partition.as_ref().map(|p| p.partition),
            partition_from: partition.as_ref().and_then(|p| p.source.clone()),
        };
        if interleaved.is_some() || perturbed.is_some() {
            // Several agents, or the baseline and its perturbations, one run:
            // interleaved block by block (`cmd::interleaved`).
            let c = super::interleaved::run(plan, &opts, &follow, a.out.clone(), a.allow_incomplete, design)?;
            code = code.max(c).max(u8::from(holes));
            continue;
        }

        // A new run dir, or the one to continue with the trials it keeps.
        // Where the trials go as OpenTelemetry traces (`--otlp`, `--otlp-file`) is said in the manifest.
        let exports = follow.export.entries(&plan.suite.name);
        let (dir, run_id, kept, resumed) = match continuing(&a) {
            Some((d, mode)) => {
                let dir = RunDir::open(d)?;
                resume::adopt_clocks(&mut plan, &dir.read_manifest()?);
                let mut built = run::manifest::build(&plan, &opts, "", &argv);
                built.adaptive = design.clone();
                if let Some(why) = adaptive_mismatch(&dir.read_manifest()?, &built) {
                    return Err(Error::Input(format!(
                        "{} {}: the run dir is not a run of this suite with these flags ({why}); start a new run instead",
                        mode.flag(),
                        dir.path.display()
                    )));
                }
                let (mut old, prepared) = resume::prepare(&dir, &plan, &opts, &built, mode, &argv)?;
                old.resumes.push(prepared.entry);
                old.planned_trials = built.planned_trials;
                old.judge_checks = built.judge_checks;
                old.exports.extend(exports);
                dir.write_manifest(&old)?;
                let run_id = old.run_id.clone();
                let to_run = match &design {
                    Some(_) => "its rounds go on from there".to_string(),
                    None => format!("{} to run", run::work(&plan, opts.partition).len() - prepared.kept.len()),
                };
                eprintln!("{} {}: {} kept, {to_run}", mode.flag(), dir.path.display(), prepared.kept.len());
                (dir, run_id, prepared.kept, true)
            }
            None => {
                let run_id = new_run_id();
                if filters.split.as_deref() == Some("held_out") {
                    held_out_ledger(&plan, &run_id)?;
                }
                let out_dir = a.out.as_ref().map(|o| if many { o.join(&plan.suite.name) } else { o.clone() });
                let dir = RunDir::create(out_dir.as_deref(), &plan.suite.name, &run_id)?;
                let mut m = run::manifest::build(&plan, &opts, &run_id, &argv);
                m.adaptive = design.clone();
                m.exports.extend(exports);
                m.harden = hardened;
                dir.write_manifest(&m)?;
                (dir, run_id, Default::default(), false)
            }
        };
        let keys: HashSet<(String, u32)> =
            kept.values().map(|k| (k.trace.record.case.clone(), k.trace.record.trial)).collect();
        let mut followers = sinks::Followers::new(&follow, &dir, &plan.suite.name, &run_id, resumed.then_some(keys))?;
        // Shared with the workers, which are detached (the watchdog may abandon one).
        let plan = std::sync::Arc::new(plan);
        let executed = match &design {
            Some(d) => {
                // Kept trials by (case, trial): the rounds place them.
                let work = run::work(&plan, None);
                let kept = kept.into_iter().map(|(i, k)| (work[i], k)).collect();
                let source = std::sync::Arc::new(run::adaptive::Rounds::new(&plan, d, kept));
                let executed =
                    Scheduler::new(jobs).execute(&dir, source.clone(), &mut run::AsMade, &mut followers.sinks())?;
                if resumed && executed.complete() {
                    // In the rounds' order, as an uninterrupted run wrote them.
                    resume::put_in_order(&dir, &plan, &source.order())?;
                }
                executed
            }
            None => {
                let source = std::sync::Arc::new(run::Planned::run(&plan, opts.partition, kept, jobs));
                Scheduler::new(jobs).execute(&dir, source, &mut run::AsMade, &mut followers.sinks())?
            }
        };
        let followed = followers.finish();
        if resumed && executed.complete() && design.is_none() {
            resume::normalize_order(&dir, &plan, &opts)?;
        }
        // The figures come from the run dir alone; a 100,000-case plan is ~50 MB.
        drop(plan);
        crate::util::memory::release_free();
        let data = conclude(&dir, a.allow_incomplete, &followed.tests)?;
        for l in &followed.exports {
            println!("{l}");
        }
        if let Some(base) = &baseline {
            print!("{}", compare::after_run(base, &data, a.allow_revision_change)?);
        }
        println!("report: {}", display_path(&dir.file(files::REPORT_HTML)));
        println!("report: {}", display_path(&dir.file(files::REPORT_MD)));
        super::json::push("runs", super::json::run_entry(&data));
        if many && data.summary.safety.is_some() {
            let accepted = data.summary.cases.iter().map(|c| (c.accepted, c.n)).collect();
            let s = &data.summary;
            pooled.push((data.manifest.suite.name.clone(), data.infos.clone(), accepted, s.safety_tallies.clone()));
        }
        if !data.gates_passed() {
            code = 1;
        }
        if holes {
            println!(
                "gate hardened: failed — the graders accept an adversary (listed above; `evalua harden` says more)"
            );
            code = 1;
        }
    }
    overall_safety(&pooled, seed);
    if cancel::requested() {
        code = code.max(1);
    }
    // Where every run of these suites can be browsed (runs/ by default).
    let folder = a.out.as_ref().map(|o| display_path(o)).unwrap_or_else(|| "runs".to_string());
    let folder =
        if folder.contains(char::is_whitespace) { format!("'{}'", folder.replace('\'', "'\\''")) } else { folder };
    println!("browse the runs: evalua view {folder}");
    Ok(code)
}

/// A suite's name, cases, (accepted, trials) per case and safety tallies.
type SafetyPart =
    (String, Vec<crate::stats::estimators::CaseInfo>, Vec<(u32, u32)>, Vec<crate::stats::safety::SafetyTally>);

/// Several suites with attack cases (AgentDojo's four): their safety figures
/// pooled, every case of every suite counted once (AgentDojo's "overall").
fn overall_safety(runs: &[SafetyPart], seed: u64) {
    if runs.len() < 2 {
        return;
    }
    let parts: Vec<_> = runs.iter().map(|(_, i, a, t)| (i.as_slice(), a.as_slice(), t.as_slice())).collect();
    let Some(s) = crate::stats::safety::pooled(&parts, seed) else { return };
    let names: Vec<&str> = runs.iter().map(|(n, ..)| n.as_str()).collect();
    print!("{}", crate::report::console::overall_safety(&names, &s));
    super::json::push("overall_safety", serde_json::json!({ "suites": names, "safety": s }));
}

/// An adaptive run's design (SPEC §20), if the run is one: `--adaptive`,
/// or a `trials = { min, max }` in the suite (a resumed run: as its
/// manifest says). Refused with the flags it cannot honour.
fn adaptive_design(
    a: &RunArgs,
    plan: &crate::trial::Plan,
    trials: Option<u32>,
    several: bool,
) -> Result<Option<crate::record::manifest::AdaptiveDesign>> {
    let resumed = match continuing(a) {
        Some((d, _)) => RunDir::open(d)?.read_manifest()?.adaptive.is_some(),
        None => false,
    };
    let flag = a.adaptive || resumed;
    let design = if several {
        run::adaptive::paired_design(plan, flag, trials)?
    } else {
        run::adaptive::design(plan, flag, trials, plan.agent_name(0))?
    };
    let Some(design) = design else { return Ok(None) };
    let refuse = |flag: &str, why: &str| Err(Error::Input(format!("{flag} with an adaptive run: {why}")));
    if a.partition.is_some() {
        return refuse(
            "--partition",
            "each round is drawn from every case's outcomes so far, which one partition cannot see; run it in one process, or partition a fixed design (--trials N)",
        );
    }
    Ok(Some(design))
}

/// How a resumed run's adaptive design differs from the run dir's.
fn adaptive_mismatch(old: &crate::record::Manifest, new: &crate::record::Manifest) -> Option<String> {
    let show = |d: &Option<crate::record::manifest::AdaptiveDesign>| match d {
        None => "fixed trials".to_string(),
        Some(d) => format!("adaptive (min {:?}, undecided {})", d.min, d.undecided),
    };
    (old.adaptive != new.adaptive).then(|| format!("{} then, {} now", show(&old.adaptive), show(&new.adaptive)))
}

/// `--harden` or the suite's `gate = { hardened = true }` on a new run:
/// the adversaries first (SPEC §19), their report printed. None otherwise
/// (a resumed run keeps what its manifest recorded).
fn harden_first(
    a: &RunArgs,
    plan: &crate::trial::Plan,
    filters: &Filters,
    seed: u64,
    switches: crate::trial::Switches,
    jobs: usize,
) -> Result<Option<crate::record::harden::Hardened>> {
    if !(a.harden || plan.suite.hardened) || continuing(a).is_some() {
        return Ok(None);
    }
    let opts = crate::harden::Options { adversaries: Vec::new(), jobs };
    let h = super::harden::suite(&plan.suite.path, filters, seed, switches, &opts)?;
    print!("{}", report::harden::text(&h));
    Ok(Some(h))
}

/// After the trials: read the run dir back (one truth for summary.json, the
/// console and the reports), write summary.json and the reports, print the
/// console summary, and return the run read back.
pub(crate) fn conclude(dir: &RunDir, allow_incomplete: bool, tests: &sinks::TestsReport) -> Result<RunData> {
    let mut data = rundata::load_with(&dir.path, allow_incomplete)?;
    dir.write_json(files::SUMMARY, &data.summary_file())?;
    data.summary_present = true;
    report::write_all(&data)?;
    // Should the reader of stdout go away while the summary prints, the gates still decide the exit code.
    if !data.gates_passed() {
        crate::util::stdio::exit_if_closed(1);
    }
    print!("{}", report::console_for(&data));
    for d in data.manifest.datasets.iter().filter(|d| d.skipped > 0) {
        println!(
            "dataset {}: {} of {} rows skipped as bad (on_error = \"skip\"; manifest.json lists the first)",
            d.path, d.skipped, d.rows
        );
    }
    print!("{}", tests.text());
    Ok(data)
}

/// Record a held-out run in the ledger and warn when the same held-out cases
/// (at this suite version) have now been run more often than the suite allows.
fn held_out_ledger(plan: &crate::trial::Plan, run_id: &str) -> Result<()> {
    let mut cases: Vec<String> = plan.cases.iter().map(|c| c.spec.id.clone()).collect();
    cases.sort();
    let entry = ledger::Entry {
        suite: plan.suite.name.clone(),
        version: plan.suite.version.clone(),
        cases,
        time: jiff::Timestamp::now().to_string(),
        run_id: run_id.to_string(),
        kind: None,
    };
    let path = ledger::path(&plan.suite.dir);
    let runs = ledger::append(&path, &entry)?;
    let max = plan.suite.held_out_max_runs as usize;
    if runs > max {
        eprintln!(
            "warning: these {} held-out cases of {} (version {}) have now been run {runs} times (held_out_max_runs = {max}): \
             figures tuned against a held-out split stop measuring generalisation ({})",
            entry.cases.len(),
            entry.suite,
            entry.version.as_deref().unwrap_or("none"),
            display_path(&path)
        );
    }
    Ok(())
}
