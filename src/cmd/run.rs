//! `evalua run`: load and plan every suite first (a bad one stops the run
//! before any agent starts), then run each, write its run dir and reports,
//! and decide its gates.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::ledger;
use crate::record::manifest::Filters;
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::{self, compare, sinks};
use crate::run::{self, Partition, RunOptions, Sink};
use crate::spec::gate;
use crate::stats::{self, RunData, SummaryFile, rundata};
use crate::trial::Plan;
use crate::util::paths::display_path;

pub struct RunArgs {
    pub suites: Vec<PathBuf>,
    pub trials: Option<u32>,
    pub jobs: usize,
    pub filters: Filters,
    pub seed: u64,
    pub out: Option<PathBuf>,
    pub quiet: bool,
    pub skip_invalid: bool,
    pub partition: Option<Partition>,
    pub baseline: Option<PathBuf>,
    pub allow_revision_change: bool,
    pub require_judge: bool,
    /// `--no-state`: do not keep each trial's changes (the run cannot be re-graded).
    pub no_state: bool,
    /// The command line, for the manifest.
    pub argv: Vec<String>,
}

pub fn run(a: RunArgs) -> Result<u8> {
    let many = a.suites.len() > 1;
    let mut plans = Vec::new();
    for path in &a.suites {
        let s = load::load(path)?;
        if let Some(why) = &s.skip {
            // e.g. a model-driven suite with no model configured: not a failure.
            println!("skipped: {}: {why}", display_path(&s.path));
            continue;
        }
        let mut plan = run::plan(s, a.trials, &a.filters, a.seed)?;
        plan.keep_state = !a.no_state;
        run::screen::screen(&mut plan, a.skip_invalid, a.jobs)?;
        plans.push(plan);
    }
    let baseline = match &a.baseline {
        Some(b) if many => {
            return Err(Error::Input(format!("--baseline {}: give one suite with --baseline", b.display())));
        }
        Some(b) => Some(compare::preflight(b, &a.suites[0], a.allow_revision_change)?),
        None => None,
    };
    let mut code = 0;
    for mut plan in plans {
        if a.require_judge {
            plan.suite.gates.push(gate::require_judge());
        }
        for w in crate::judge::calibration_warnings(&plan.suite) {
            eprintln!("warning: {w}");
        }
        let opts = RunOptions {
            trials: a.trials,
            jobs: a.jobs,
            filters: a.filters.clone(),
            seed: a.seed,
            partition: a.partition,
        };
        let run_id = new_run_id();
        if a.filters.split.as_deref() == Some("held_out") {
            held_out_ledger(&plan, &run_id)?;
        }
        let out_dir = a.out.as_ref().map(|o| if many { o.join(&plan.suite.name) } else { o.clone() });
        let dir = RunDir::create(out_dir.as_deref(), &plan.suite.name, &run_id)?;
        dir.write_manifest(&run::manifest::build(&plan, &opts, &run_id, &a.argv))?;

        let mut trials_file = sinks::TrialsFile::create(&dir)?;
        let mut progress = sinks::Progress::new(!a.quiet);
        let mut figures = sinks::Figures(stats::Tally::new(0));
        let mut tests = sinks::TestsReport::default();
        let mut all: [&mut dyn Sink; 4] = [&mut trials_file, &mut progress, &mut figures, &mut tests];
        run::execute(&plan, &opts, &dir, &mut all)?;
        let data = conclude(&plan, &dir, &run_id, &figures, &tests)?;
        println!("report: {}", display_path(&dir.file("report.html")));
        if let Some(base) = &baseline {
            print!("{}", compare::after_run(base, &data, a.allow_revision_change)?);
        }
        if !data.gates_passed() {
            code = 1;
        }
    }
    // Where every run of these suites can be browsed (runs/ by default).
    let folder = a.out.as_ref().map(|o| display_path(o)).unwrap_or_else(|| "runs".to_string());
    let folder =
        if folder.contains(char::is_whitespace) { format!("'{}'", folder.replace('\'', "'\\''")) } else { folder };
    println!("browse the runs: evalua view {folder}");
    Ok(code)
}

/// After the trials: write summary.json, print the console summary, write
/// the reports, and return the run dir read back.
pub(crate) fn conclude(
    plan: &Plan,
    dir: &RunDir,
    run_id: &str,
    figures: &sinks::Figures,
    tests: &sinks::TestsReport,
) -> Result<RunData> {
    let infos = plan.case_infos();
    let summary = stats::summarize(&infos, &figures.0, plan.seed);
    let gates = stats::decide_gates(&plan.suite.gates, &summary);
    dir.write_json(
        "summary.json",
        &SummaryFile {
            suite: &plan.suite.name,
            version: plan.suite.version.as_deref(),
            run_id,
            seed: plan.seed,
            summary: &summary,
            gates: &gates,
        },
    )?;
    print!("{}", report::console(&plan.suite.name, &summary, &gates, &dir.path.display().to_string()));
    print!("{}", tests.text());
    let data = rundata::load(&dir.path)?;
    report::write_all(&data)?;
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
