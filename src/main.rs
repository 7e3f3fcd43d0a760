//! The command line: parse, dispatch to `evalua::cmd`, map errors to exit
//! codes (0 ran and every gate held, 1 a gate failed, 2 the input is wrong,
//! 3 evalua itself could not go on).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use evalua::cmd;
use evalua::error::Result;
use evalua::record::manifest::Filters;
use evalua::run::PartitionArg;

// mimalloc, not glibc's malloc: a trial makes thousands of small allocations
// (Lua tables, strings, JSON), and glibc spent ~25% of a 100,000-case run in
// malloc/free and kept each worker's freed memory in its own arena.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Give freed memory back to the system at once (as glibc does), not after
/// mimalloc's default delay of 10 ms (100,000 cases: ~20 MB more at the peak).
/// The index is that of `mi_option_purge_delay` in libmimalloc-sys 0.1.49
/// (mimalloc v3), pinned in Cargo.toml. (Its `no_thp` feature keeps mimalloc
/// from asking for transparent huge pages: with them a 1,000-case run held
/// 42 MB, not 27 MB.)
fn configure_allocator() {
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: setting an option is allowed at any time; this one only changes
    // when freed memory goes back to the system.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

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

#[derive(Subcommand)]
enum LabelsCommand {
    /// Agreement between annotators: Cohen's kappa per pair, Krippendorff's alpha, per criterion and overall
    Agree {
        #[arg(value_name = "STORE")]
        store: PathBuf,
        /// One JSON document on stdout ("schema": "evalua.labels/1"); the text goes to stderr
        #[arg(long)]
        json: bool,
    },
    /// Hold out a deterministic, stratified share of the items (writes STORE.split.json)
    Split {
        #[arg(value_name = "STORE")]
        store: PathBuf,
        /// The share of items held out, between 0 and 1
        #[arg(long = "held-out", value_name = "F")]
        held_out: f64,
        #[arg(long, value_name = "N")]
        seed: u64,
        /// Replace an existing split that differs
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
    /// Write the items in the calibration format (majority verdict per criterion; ties left out)
    Export {
        #[arg(value_name = "STORE")]
        store: PathBuf,
        /// The file to write (default: stdout)
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Export the held-out items instead of the others (counted in the ledger)
        #[arg(long)]
        held_out: bool,
        #[arg(long)]
        json: bool,
    },
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

/// Output for machines (SPEC §16).
#[derive(Args, Clone, Copy)]
struct Machine {
    /// Print one JSON document on stdout (schema "evalua.<command>/1"; docs/reference/cli.md); human text goes to stderr
    #[arg(long)]
    json: bool,
}

/// Sending trials as OpenTelemetry traces (SPEC §9).
#[derive(Args, Clone)]
struct Otlp {
    /// Send every trial as an OpenTelemetry trace over OTLP/HTTP (protobuf) to this URL
    /// (a URL without a path gets /v1/traces); default: the OTEL_EXPORTER_OTLP_* variables
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Also write the traces to FILE as OTLP JSON lines (one ExportTraceServiceRequest per line)
    #[arg(long, value_name = "FILE")]
    otlp_file: Option<PathBuf>,
    /// Leave inputs, answers, tool arguments and results, error texts and check explanations out
    #[arg(long)]
    otlp_no_content: bool,
}

/// How a run is followed (every kind of run: run, regrade, grade).
#[derive(Args, Clone)]
struct Follow {
    /// No progress display
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    otlp: Otlp,
}

impl Follow {
    fn options(&self) -> Result<evalua::report::sinks::Follow> {
        Ok(evalua::report::sinks::Follow { quiet: self.quiet, export: self.otlp.options()? })
    }
}

impl Otlp {
    fn options(&self) -> Result<evalua::otel::export::Options> {
        Ok(evalua::otel::export::Options {
            endpoint: evalua::otel::export::endpoint(self.otlp.as_deref())?,
            file: self.otlp_file.clone(),
            content: !self.otlp_no_content,
        })
    }
}

impl Select {
    fn filters(&self) -> Filters {
        Filters { case: self.case.clone(), tags: self.tags.clone(), split: self.split.clone() }
    }
}

// Parsed once per process: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run every case × trials, write a run dir, print a summary
    Run {
        #[command(flatten)]
        machine: Machine,
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
        /// Run seed: the same seed gives the same trial seeds [default: 1]
        #[arg(long)]
        seed: Option<u64>,
        /// Write the run dir here (default runs/<suite>/<time>-<id>/)
        #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "retry_errors"])]
        out: Option<PathBuf>,
        /// Finish an interrupted run: keep the trials in RUN_DIR/trials.jsonl, run the rest with the same seeds
        #[arg(long, value_name = "RUN_DIR", conflicts_with = "retry_errors")]
        resume: Option<PathBuf>,
        /// As --resume, and also run the run's infra_error trials again
        #[arg(long, value_name = "RUN_DIR")]
        retry_errors: Option<PathBuf>,
        /// On an incomplete run (interrupted), decide the gates on the trials that ran instead of failing them
        #[arg(long)]
        allow_incomplete: bool,
        /// Skip (and report) cases whose tests do not hold on their initial tree instead of failing
        #[arg(long)]
        skip_invalid: bool,
        /// Run only this deterministic share of the (case, trial) pairs: hash:I/N (e.g. hash:1/4), or auto
        /// (from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX + EVALUA_PARTITIONS, or EVALUA_PARTITION=I/N)
        #[arg(long, value_name = "hash:I/N|auto", value_parser = PartitionArg::parse)]
        partition: Option<PartitionArg>,
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
        /// Do not keep each trial's changes (database changeset, changed files); the run cannot be re-graded
        #[arg(long)]
        no_state: bool,
        /// How agents and commands are isolated: `sandbox` (bubblewrap, the default) or `none` (unconfined)
        #[arg(long, value_enum, default_value = "sandbox")]
        isolation: IsolationArg,
        #[command(flatten)]
        follow: Follow,
    },
    /// Grade recorded traces (OTLP JSON, flat span lines, evalua run dirs) with the suite's monitors and checks
    #[command(override_usage = "evalua grade SUITE.lua --traces PATH... [OPTIONS]")]
    Grade {
        #[command(flatten)]
        machine: Machine,
        /// The suite (also accepted after the trace paths: `--traces FILE SUITE.lua`)
        #[arg(value_name = "SUITE.lua")]
        suite: Option<PathBuf>,
        /// Trace files or folders (OTLP JSON or JSON lines, flat span lines), or evalua run dirs
        #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
        traces: Vec<PathBuf>,
        /// Write the run dir here (default runs/<suite>/<time>-<id>/)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Items graded at once (default: the number of cores)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        #[command(flatten)]
        follow: Follow,
    },
    /// Send a finished run's trials as OpenTelemetry GenAI traces
    Export {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        #[command(flatten)]
        otlp: Otlp,
    },
    /// Turn a graded run's flagged items into versioned golden cases (a Lua module)
    Promote {
        #[arg(value_name = "GRADED_RUN")]
        dir: PathBuf,
        /// The goldens module to create or update, e.g. suites/goldens/refunds.lua
        #[arg(long, value_name = "FILE.lua")]
        into: PathBuf,
        /// Only items flagged with this failure mode (a monitor's name)
        #[arg(long, value_name = "NAME")]
        mode: Option<String>,
        /// Golden cases kept per cluster: its first N distinct inputs (other wordings of the same failure)
        #[arg(long, value_name = "N", default_value = "3", value_parser = clap::value_parser!(u32).range(1..))]
        per_cluster: u32,
    },
    /// Re-render report.md, report.html and junit.xml from a run dir (or print a pull-request comment)
    Report {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        /// On an incomplete run, decide the gates on the trials that ran instead of failing them
        #[arg(long)]
        allow_incomplete: bool,
        /// `files`: write report.md, report.html, junit.xml; `github`: print a pull-request comment (Markdown) and write nothing
        #[arg(long, value_enum, default_value = "files")]
        format: ReportFormat,
        /// With --format github: compare with this run (default: the baseline of `run --baseline`, from compare.json)
        #[arg(long, value_name = "BASE_RUN")]
        baseline: Option<PathBuf>,
        /// With --baseline: compare even if the suite file or its cases changed
        #[arg(long)]
        allow_revision_change: bool,
        /// With --format github: link the comment to the run dir uploaded as this CI artifact
        #[arg(long, value_name = "URL")]
        artifact_url: Option<String>,
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
    /// Print one trial's trace from a run dir
    Show {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        #[arg(value_name = "CASE")]
        case: String,
        #[arg(value_name = "TRIAL")]
        trial: u32,
        /// Print the stored JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Re-run the suite's current checks on a run's recorded final states; no agent runs
    Regrade {
        #[command(flatten)]
        machine: Machine,
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        /// The suite whose checks to run (default: the suite file the run recorded)
        #[arg(long, value_name = "SUITE.lua")]
        suite: Option<PathBuf>,
        /// Write the new run dir here (default runs/<suite>/<time>-<id>/)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Re-grade even if a case's fixture, schema or work tree changed since the run
        #[arg(long)]
        allow_fixture_change: bool,
        /// Trials re-graded at once (default: the number of cores)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        #[command(flatten)]
        follow: Follow,
        /// Call judge models even when a cached verdict exists (and store none)
        #[arg(long)]
        no_cache: bool,
        /// How check commands and test runners are isolated: `sandbox` (bubblewrap, the default) or `none` (unconfined)
        #[arg(long, value_enum, default_value = "sandbox")]
        isolation: IsolationArg,
    },
    /// Combine the partitioned runs of one suite into one run dir
    Merge {
        /// The parts' run dirs, or folders holding them (one sub-folder per part)
        #[arg(required = true, value_name = "RUN_DIR|FOLDER")]
        dirs: Vec<PathBuf>,
        /// The merged run dir (must not exist or be empty)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run the suite's judge on human-labelled items: kappa, confusion matrix, false pass / false fail rates
    Calibrate {
        #[command(flatten)]
        machine: Machine,
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        /// JSON Lines: one labelled item per line (see docs/guide.md, "Judges")
        #[arg(long, value_name = "FILE")]
        labels: PathBuf,
        /// Calibrate only the rubric with this name
        #[arg(long, value_name = "NAME")]
        rubric: Option<String>,
        /// Call the judge even when a cached verdict exists
        #[arg(long)]
        no_cache: bool,
        /// Use the label store's held-out items (its split) instead of the others; counted in the ledger
        #[arg(long)]
        held_out: bool,
        /// Measure the judges on the held-out items and compare with their last measurement (kappa, false-pass rate, intervals); decides a judge_kappa gate
        #[arg(long)]
        recheck: bool,
    },
    /// Human labels (a label store, labels/<suite>.jsonl): agreement, held-out split, calibration export
    Labels {
        #[command(subcommand)]
        command: LabelsCommand,
    },
    /// Load and validate a suite (ids, fixtures, schemas, checks); no agent runs
    Check {
        #[command(flatten)]
        machine: Machine,
        #[arg(required = true, value_name = "SUITE.lua")]
        suites: Vec<PathBuf>,
        /// Report cases whose tests do not hold on their initial tree as warnings, not errors
        #[arg(long)]
        skip_invalid: bool,
        /// How test runners are isolated: `sandbox` (bubblewrap, the default) or `none` (unconfined)
        #[arg(long, value_enum, default_value = "sandbox")]
        isolation: IsolationArg,
    },
    /// Run graders on their must-pass / must-fail examples (*_test.lua files; default graders/)
    Test {
        #[command(flatten)]
        machine: Machine,
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// How check commands and test runners are isolated: `sandbox` (bubblewrap, the default) or `none` (unconfined)
        #[arg(long, value_enum, default_value = "sandbox")]
        isolation: IsolationArg,
    },
    /// Browse every run dir under DIR (default runs/) in a local web page on 127.0.0.1
    View {
        #[arg(value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Port on 127.0.0.1 (default: 8787, or the next free one; 0: any free port)
        #[arg(long)]
        port: Option<u16>,
        /// Open the page in a browser ($BROWSER, else xdg-open / open)
        #[arg(long)]
        open: bool,
        /// Link each trial to its trace in a trace store: a URL with {trace_id}, {conversation_id}, {run_id}, {case}, {trial} (or EVALUA_TRACE_URL)
        #[arg(long, value_name = "URL")]
        trace_url: Option<String>,
        /// Label trials as NAME (or EVALUA_ANNOTATOR): verdicts per rubric criterion, failure-mode tags, notes
        #[arg(long, value_name = "NAME")]
        annotator: Option<String>,
        /// Write every run's labels to this store (default: labels/<suite>.jsonl beside each run's suite)
        #[arg(long, value_name = "STORE")]
        labels: Option<PathBuf>,
    },
    /// Serve MCP on stdio for coding agents: list suites and cases, check, run, show a trial, compare, grade
    Mcp {
        /// The project root: every path a tool is given must lie inside it (default: the current directory)
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
    },
    /// Write a starting project: a suite, a Python agent, a grader with its tests, editor types, a CI workflow
    Init {
        #[arg(value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// The GitHub Action the workflow uses
        #[arg(long, value_name = "OWNER/REPO@REF", default_value = cmd::init::DEFAULT_ACTION)]
        action: String,
    },
    /// List the cases with split, tags and difficulty
    List {
        #[command(flatten)]
        machine: Machine,
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        #[command(flatten)]
        select: Select,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ReportFormat {
    Files,
    Github,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum IsolationArg {
    Sandbox,
    None,
}

/// Set how processes are isolated; opting out is said loudly.
fn isolate(i: IsolationArg) {
    if i == IsolationArg::None {
        evalua::process::set_isolation(evalua::process::Isolation::None);
        eprintln!(
            "warning: --isolation none: agents, their tools' commands, check commands and test runners run unconfined, \
             as your user, with your files, processes and network (recorded in the manifest)"
        );
    }
}

impl Command {
    /// The command's name when `--json` was given: its document's schema is `evalua.<name>/1`.
    fn json(&self) -> Option<&'static str> {
        let (name, on) = match self {
            Command::Run { machine, .. } => ("run", machine.json),
            Command::Grade { machine, .. } => ("grade", machine.json),
            Command::Regrade { machine, .. } => ("regrade", machine.json),
            Command::Calibrate { machine, .. } => ("calibrate", machine.json),
            Command::Check { machine, .. } => ("check", machine.json),
            Command::Test { machine, .. } => ("test", machine.json),
            Command::List { machine, .. } => ("list", machine.json),
            Command::Compare { json, .. } => ("compare", *json),
            Command::Labels { command } => match command {
                LabelsCommand::Agree { json, .. }
                | LabelsCommand::Split { json, .. }
                | LabelsCommand::Export { json, .. } => ("labels", *json),
            },
            _ => return None,
        };
        on.then_some(name)
    }
}

/// Arguments that do not parse, with `--json` among them: the usage error as
/// the command's JSON document (exit 2), so a machine reads it as it reads the rest.
fn usage_error_json(e: &clap::Error) -> Option<ExitCode> {
    use clap::error::ErrorKind;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--json")
        || matches!(
            e.kind(),
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        return None;
    }
    const COMMANDS: [&str; 9] = ["run", "check", "list", "compare", "grade", "regrade", "test", "calibrate", "labels"];
    let command = args.iter().find(|a| COMMANDS.contains(&a.as_str()))?;
    let text = e.render().to_string();
    eprint!("{text}");
    let first = text.lines().next().unwrap_or("").trim_start_matches("error: ");
    println!("{}", serde_json::to_string_pretty(&cmd::json::failed(command, 2, first)).unwrap_or_default());
    Some(ExitCode::from(2))
}

fn main() -> ExitCode {
    configure_allocator();
    evalua::util::tls::install();
    std::panic::set_hook(Box::new(|info| {
        eprintln!("evalua: internal error (please report it): {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match usage_error_json(&e) {
            Some(code) => return code,
            None => e.exit(),
        },
    };
    // --json: stdout is the document's alone; every human line goes to stderr.
    let mut json_out = None;
    if let Some(name) = cli.command.json() {
        match evalua::util::stdio::divert() {
            Ok(f) => json_out = Some(f),
            Err(e) => {
                eprintln!("error: --json: cannot set stdout aside: {e}");
                return ExitCode::from(3);
            }
        }
        cmd::json::begin(name);
    }
    let result = dispatch(cli);
    let (code, error) = match result {
        Ok(code) => (code, None),
        Err(e) => {
            // Several errors at once (`evalua check`): each on its own line.
            for line in e.to_string().lines() {
                eprintln!("error: {line}");
            }
            (e.exit_code(), Some(e))
        }
    };
    if let Some(mut out) = json_out
        && let Some(doc) = cmd::json::finish(code, error.as_ref())
    {
        use std::io::Write;
        let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
        if let Err(e) = writeln!(out, "{text}").and_then(|_| out.flush()) {
            eprintln!("error: --json: cannot write the document: {e}");
            return ExitCode::from(3);
        }
    }
    ExitCode::from(code)
}

/// `evalua grade`'s suite: the positional one, or, when `--traces` took it
/// (`--traces FILE SUITE.lua`: the flag takes every path after it), the
/// `.lua` file among the trace paths (a trace is never Lua).
fn grade_suite(suite: Option<PathBuf>, mut traces: Vec<PathBuf>) -> Result<(PathBuf, Vec<PathBuf>)> {
    if let Some(s) = suite {
        return Ok((s, traces));
    }
    let lua = traces.iter().rposition(|p| p.extension().is_some_and(|e| e == "lua"));
    match lua {
        Some(i) if traces.len() > 1 => {
            let s = traces.remove(i);
            Ok((s, traces))
        }
        _ => Err(evalua::error::Error::Input(
            "evalua grade: which suite? give it first: evalua grade SUITE.lua --traces PATH...".into(),
        )),
    }
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run {
            suites,
            trials,
            jobs,
            select,
            seed,
            out,
            skip_invalid,
            partition,
            baseline,
            allow_revision_change,
            no_cache,
            require_judge,
            follow,
            no_state,
            resume,
            retry_errors,
            allow_incomplete,
            isolation,
            machine: _,
        } => {
            isolate(isolation);
            evalua::judge::cache::set_disabled(no_cache);
            let follow = follow.options()?;
            cmd::run::run(cmd::run::RunArgs {
                suites,
                trials,
                jobs: jobs.map(|j| j as usize).unwrap_or_else(evalua::run::default_jobs),
                filters: select.filters(),
                seed,
                out,
                skip_invalid,
                partition,
                baseline,
                allow_revision_change,
                require_judge,
                no_state,
                resume,
                retry_errors,
                allow_incomplete,
                argv: std::env::args().collect(),
                follow,
            })
        }
        Command::Grade { suite, traces, out, jobs, follow, machine: _ } => {
            let (suite, traces) = grade_suite(suite, traces)?;
            cmd::grade::grade(cmd::grade::GradeArgs {
                suite,
                traces,
                out,
                jobs: jobs.map(|j| j as usize).unwrap_or_else(evalua::run::default_jobs),
                follow: follow.options()?,
                argv: std::env::args().collect(),
            })
        }
        Command::Export { dir, otlp } => cmd::export::export(&dir, otlp.options()?),
        Command::Promote { dir, into, mode, per_cluster } => {
            cmd::promote::promote(&dir, &into, mode.as_deref(), per_cluster as usize)
        }
        Command::Report { dir, allow_incomplete, format, baseline, allow_revision_change, artifact_url } => {
            match format {
                ReportFormat::Files => cmd::report::report(&dir, allow_incomplete),
                ReportFormat::Github => cmd::report::github(cmd::report::GithubArgs {
                    dir,
                    allow_incomplete,
                    baseline,
                    allow_revision_change,
                    artifact_url,
                }),
            }
        }
        Command::Compare { base, cand, allow_revision_change, json, markdown } => {
            cmd::compare::compare(&base, &cand, allow_revision_change, json, markdown)
        }
        Command::Merge { dirs, out } => cmd::merge::merge(&dirs, &out),
        Command::Show { dir, case, trial, json } => cmd::show::show(&dir, &case, trial, json),
        Command::Regrade { dir, suite, out, allow_fixture_change, jobs, follow, no_cache, isolation, machine: _ } => {
            isolate(isolation);
            evalua::judge::cache::set_disabled(no_cache);
            cmd::regrade::regrade(cmd::regrade::RegradeArgs {
                dir,
                suite,
                out,
                allow_fixture_change,
                jobs: jobs.map(|j| j as usize).unwrap_or_else(evalua::run::default_jobs),
                follow: follow.options()?,
                argv: std::env::args().collect(),
            })
        }
        Command::Calibrate { suite, labels, rubric, no_cache, held_out, recheck, machine: _ } => {
            evalua::judge::cache::set_disabled(no_cache);
            let part =
                if held_out { evalua::judge::labels::Part::HeldOut } else { evalua::judge::labels::Part::Calibration };
            let opts = evalua::judge::calibrate::Options { rubric: rubric.as_deref(), part, recheck };
            cmd::calibrate::calibrate(&suite, &labels, &opts)
        }
        Command::Labels { command } => match command {
            LabelsCommand::Agree { store, json } => cmd::labels::agree(&store, json),
            LabelsCommand::Split { store, held_out, seed, force, json } => {
                cmd::labels::split(&store, held_out, seed, force, json)
            }
            LabelsCommand::Export { store, out, held_out, json } => {
                cmd::labels::export(&store, out.as_ref(), held_out, json)
            }
        },
        Command::Check { suites, skip_invalid, isolation, machine: _ } => {
            isolate(isolation);
            cmd::check::check(&suites, skip_invalid)
        }
        Command::Test { paths, isolation, machine: _ } => {
            isolate(isolation);
            cmd::test::test(&paths)
        }
        Command::List { suite, select, machine: _ } => cmd::list::list(&suite, &select.filters()),
        Command::Mcp { root } => cmd::mcp::mcp(root.as_deref()),
        Command::Init { dir, action } => cmd::init::init(&dir, &action),
        Command::View { dirs, port, open, trace_url, annotator, labels } => {
            let trace_url = trace_url.or_else(|| std::env::var("EVALUA_TRACE_URL").ok().filter(|u| !u.is_empty()));
            let annotator = annotator.or_else(|| std::env::var("EVALUA_ANNOTATOR").ok().filter(|a| !a.is_empty()));
            cmd::view::view(dirs, port, open, trace_url, annotator, labels)
        }
    }
}
