//! The command line: parse, dispatch, map errors to exit codes
//! (0 ran and every gate held, 1 a gate failed, 2 the input is wrong).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use evalua::error::UserError;
use evalua::run::{self, Filters, RunOptions};
use evalua::{compare, partition, report, rundir, suite};

#[derive(Parser)]
#[command(
    name = "evalua",
    version,
    about = "Evaluate LLM agents with repeated, isolated trials, graded on final state and trajectory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Select {
    /// Only cases whose id matches this glob (e.g. 'refund_*')
    #[arg(long = "case", value_name = "GLOB")]
    case: Option<String>,
    /// Only cases with this tag (repeatable: any of them)
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only cases of this split
    #[arg(long, value_parser = ["dev", "held_out"])]
    split: Option<String>,
}

impl Select {
    fn filters(&self) -> Filters {
        Filters { case: self.case.clone(), tags: self.tags.clone(), split: self.split.clone() }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run every case × trials, write a run dir, print a summary
    Run {
        #[arg(required = true, value_name = "SUITE.lua")]
        suites: Vec<PathBuf>,
        /// Trials per case (overrides the suite and the cases)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        trials: Option<u32>,
        /// Trials run at once (default: the number of cores)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        #[command(flatten)]
        select: Select,
        /// Run seed: the same seed gives the same trial seeds
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the run dir here (default runs/<suite>/<time>-<id>/)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// No progress bar
        #[arg(long, short)]
        quiet: bool,
        /// Skip (and report) cases whose tests do not hold on their initial tree instead of failing
        #[arg(long)]
        skip_invalid: bool,
        /// Run only this deterministic share of the (case, trial) pairs, e.g. hash:1/4
        #[arg(long, value_name = "hash:I/N", value_parser = partition::Partition::parse)]
        partition: Option<partition::Partition>,
        /// Compare the finished run with this earlier run dir (as `evalua compare`)
        #[arg(long, value_name = "RUN_DIR")]
        baseline: Option<PathBuf>,
        /// With --baseline: compare even if the suite or its cases changed
        #[arg(long)]
        allow_revision_change: bool,
        /// Call judge models even when a cached verdict exists (and store none)
        #[arg(long)]
        no_cache: bool,
        /// A skipped judge check (no judge model reachable) fails the run
        #[arg(long)]
        require_judge: bool,
    },
    /// Re-render report.md, report.html and junit.xml from a run dir
    Report {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
    },
    /// Compare two runs case by case: improved / regressed / unchanged / unresolved
    Compare {
        #[arg(value_name = "BASE_RUN")]
        base: PathBuf,
        #[arg(value_name = "CAND_RUN")]
        cand: PathBuf,
        /// Compare even if the suite file or its cases changed between the runs
        #[arg(long)]
        allow_revision_change: bool,
        /// Print JSON instead of the table
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print Markdown (for a pull-request comment) instead of the table
        #[arg(long)]
        markdown: bool,
    },
    /// Combine the partitioned runs of one suite into one run dir
    Merge {
        #[arg(required = true, value_name = "RUN_DIR")]
        dirs: Vec<PathBuf>,
        /// The merged run dir (must not exist or be empty)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run the suite's judge on human-labelled items: kappa, confusion matrix, false pass / false fail rates
    Calibrate {
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        /// JSON Lines: one labelled item per line (see README, "Judges")
        #[arg(long, value_name = "FILE")]
        labels: PathBuf,
        /// Calibrate only the rubric with this name
        #[arg(long, value_name = "NAME")]
        rubric: Option<String>,
        /// Call the judge even when a cached verdict exists
        #[arg(long)]
        no_cache: bool,
    },
    /// Load and validate a suite (ids, fixtures, schemas, checks); no agent runs
    Check {
        #[arg(required = true, value_name = "SUITE.lua")]
        suites: Vec<PathBuf>,
        /// Report cases whose tests do not hold on their initial tree as warnings, not errors
        #[arg(long)]
        skip_invalid: bool,
    },
    /// List the cases with split, tags and difficulty
    List {
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        #[command(flatten)]
        select: Select,
    },
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("evalua: internal error (please report it): {info}");
    }));
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8, UserError> {
    match cli.command {
        Command::Run {
            suites,
            trials,
            jobs,
            select,
            seed,
            out,
            quiet,
            skip_invalid,
            partition,
            baseline,
            allow_revision_change,
            no_cache,
            require_judge,
        } => {
            evalua::judge::cache::set_disabled(no_cache);
            let argv: Vec<String> = std::env::args().collect();
            let jobs = jobs
                .map(|j| j as usize)
                .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
            let mut code = 0;
            let many = suites.len() > 1;
            // Load and plan every suite first: a bad one stops the run before any agent starts.
            let mut plans = Vec::new();
            for path in &suites {
                let s = suite::load(path)?;
                if let Some(why) = &s.skip {
                    // e.g. a model-driven suite with no model configured: not a failure.
                    println!("skipped: {}: {why}", evalua::lua::display_path(&s.path));
                    continue;
                }
                let mut plan = run::plan(s, trials, &select.filters(), seed)?;
                evalua::coding::screen(&mut plan, skip_invalid, jobs)?;
                plans.push(plan);
            }
            let baseline = match &baseline {
                Some(b) if many => {
                    return Err(UserError(format!("--baseline {}: give one suite with --baseline", b.display())));
                }
                Some(b) => Some(compare::preflight(b, &suites[0], allow_revision_change)?),
                None => None,
            };
            for mut plan in plans {
                if require_judge {
                    plan.suite.gates.push(evalua::judge::require_judge_gate());
                }
                for w in evalua::judge::calibration_warnings(&plan.suite) {
                    eprintln!("warning: {w}");
                }
                let opts = RunOptions { trials, jobs, filters: select.filters(), seed, progress: !quiet, partition };
                let run_id = run::new_run_id();
                let out_dir = out.as_ref().map(|o| if many { o.join(&plan.suite.name) } else { o.clone() });
                let dir = run::make_run_dir(out_dir.as_deref(), &plan.suite.name, &run_id)?;
                let result = run::execute(&plan, &opts, &dir, &run_id, &argv)?;
                print!(
                    "{}",
                    report::console(&plan.suite.name, &result.summary, &result.gates, &dir.display().to_string())
                );
                print!("{}", evalua::coding::test_report(&dir));
                let data = rundir::load(&dir)?;
                report::write_all(&data)?;
                if let Some(base) = &baseline {
                    print!("{}", compare::after_run(base, &data, allow_revision_change)?);
                }
                if !result.gates_passed() {
                    code = 1;
                }
            }
            Ok(code)
        }
        Command::Report { dir } => {
            let data = rundir::load(&dir)?;
            report::write_all(&data)?;
            for g in &data.gates {
                println!("{}", report::gate_line(g));
            }
            println!("wrote {}/report.md, report.html, junit.xml", dir.display());
            Ok(if data.gates_passed() { 0 } else { 1 })
        }
        Command::Compare { base, cand, allow_revision_change, json, markdown } => {
            compare::command(&base, &cand, allow_revision_change, json, markdown)
        }
        Command::Merge { dirs, out } => partition::merge(&dirs, &out),
        Command::Calibrate { suite: path, labels, rubric, no_cache } => {
            evalua::judge::cache::set_disabled(no_cache);
            let s = suite::load(&path)?;
            let done = evalua::calibrate::run(&s, &labels, rubric.as_deref())?;
            for c in &done {
                print!("{}", c.text);
            }
            Ok(if done.iter().all(|c| c.compared > 0) { 0 } else { 1 })
        }
        Command::Check { suites, skip_invalid } => {
            let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            for path in &suites {
                let s = suite::load(path)?;
                let mut plan = run::plan(s, None, &Filters::default(), 1)?;
                evalua::coding::screen(&mut plan, skip_invalid, jobs)?;
                let trials: u32 = plan.cases.iter().map(|c| c.trials).sum();
                let checks: usize = plan.cases.iter().map(|c| c.spec.checks.len()).sum();
                println!(
                    "ok: {} ({} cases, {} tools, {} checks, {} trials per run{})",
                    evalua::lua::display_path(&plan.suite.path),
                    plan.cases.len(),
                    plan.suite.tools.len(),
                    checks,
                    trials,
                    match plan.invalid.len() {
                        0 => String::new(),
                        n => format!("; {n} invalid cases skipped"),
                    }
                );
            }
            Ok(0)
        }
        Command::List { suite: path, select } => {
            let s = suite::load(&path)?;
            let plan = run::plan(s, None, &select.filters(), 1)?;
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
            t.set_header(vec!["case", "split", "tags", "difficulty", "trials", "checks", "declared at"]);
            for c in &plan.cases {
                t.add_row(vec![
                    c.spec.id.clone(),
                    c.spec.split.clone(),
                    c.spec.tags.join(", "),
                    c.spec.difficulty.clone().unwrap_or_default(),
                    c.trials.to_string(),
                    c.spec.checks.len().to_string(),
                    c.spec.location.clone(),
                ]);
            }
            println!("{t}");
            Ok(0)
        }
    }
}
