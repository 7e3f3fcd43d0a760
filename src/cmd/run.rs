//! `evalua run`: load and plan every suite first (a bad one stops the run
//! before any agent starts), then run each, write its run dir and reports,
//! and decide its gates.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::manifest::Filters;
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::{self, compare, sinks};
use crate::run::{self, Partition, RunOptions, Sink};
use crate::spec::gate;
use crate::stats::{self, SummaryFile, rundata};
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
        run::screen::require_sandbox(&plan)?;
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
        // Shared with the workers, which are detached (the watchdog may abandon one).
        let plan = std::sync::Arc::new(plan);
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
        let out_dir = a.out.as_ref().map(|o| if many { o.join(&plan.suite.name) } else { o.clone() });
        let dir = RunDir::create(out_dir.as_deref(), &plan.suite.name, &run_id)?;
        dir.write_manifest(&run::manifest::build(&plan, &opts, &run_id, &a.argv))?;

        let mut trials_file = sinks::TrialsFile::create(&dir)?;
        let mut progress = sinks::Progress::new(!a.quiet);
        let mut figures = sinks::Figures(stats::Tally::new(0));
        let mut tests = sinks::TestsReport::default();
        let mut all: [&mut dyn Sink; 4] = [&mut trials_file, &mut progress, &mut figures, &mut tests];
        run::execute(&plan, &opts, &dir, &mut all)?;

        let infos = plan.case_infos();
        let summary = stats::summarize(&infos, &figures.0, plan.seed);
        let gates = stats::decide_gates(&plan.suite.gates, &summary);
        dir.write_json(
            "summary.json",
            &SummaryFile {
                suite: &plan.suite.name,
                version: plan.suite.version.as_deref(),
                run_id: &run_id,
                seed: plan.seed,
                summary: &summary,
                gates: &gates,
            },
        )?;
        print!("{}", report::console(&plan.suite.name, &summary, &gates, &dir.path.display().to_string()));
        print!("{}", tests.text());
        let data = rundata::load(&dir.path)?;
        report::write_all(&data)?;
        if let Some(base) = &baseline {
            print!("{}", compare::after_run(base, &data, a.allow_revision_change)?);
        }
        if !gates.iter().all(|g| g.passed) {
            code = 1;
        }
    }
    Ok(code)
}
