//! The command line: parse, dispatch to `evalua::cmd`, map errors to exit
//! codes (0 ran and every gate held, 1 a gate failed, 2 the input is wrong,
//! 3 evalua itself could not go on).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use evalua::cmd::{self, flags};
use evalua::error::Result;

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

// Parsed once per process: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run every case × trials, write a run dir, print a summary
    Run(cmd::run::RunArgs),
    /// Attack every case's graders with adversary agents (lazy, dishonest, over-broad); list the holes
    Harden(cmd::harden::HardenArgs),
    /// Grade recorded traces (OTLP JSON, flat span lines, evalua run dirs, τ-bench results, ATIF) with the suite's monitors and checks
    #[command(override_usage = "evalua grade SUITE.lua --traces PATH... [OPTIONS]")]
    Grade(cmd::grade::GradeArgs),
    /// Send a finished run's trials as OpenTelemetry GenAI traces
    Export {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        #[command(flatten)]
        otlp: flags::Otlp,
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
        #[arg(long, value_name = "N", default_value = "3", value_parser = cmd::flags::positive)]
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
    Regrade(cmd::regrade::RegradeArgs),
    /// How many cases and trials per case detect a difference in pass^1, with the reasoning
    Plan(cmd::plan::PlanArgs),
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
        machine: flags::Machine,
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        /// JSON Lines: one labelled item per line (see docs/guide.md, "Judges")
        #[arg(long, value_name = "FILE")]
        labels: PathBuf,
        /// Calibrate only the rubric with this name
        #[arg(long, value_name = "NAME")]
        rubric: Option<String>,
        #[command(flatten)]
        no_cache: flags::NoCache,
        /// Use the label store's held-out items (its split) instead of the others; counted in the ledger
        #[arg(long)]
        held_out: bool,
        /// Measure the judges on the held-out items and compare with their last measurement (kappa, false-pass rate, intervals); decides a judge_kappa gate
        #[arg(long)]
        recheck: bool,
    },
    /// An offline OpenAI-compatible judge on 127.0.0.1 answering rubric and pairwise requests from a rules file
    MockJudge {
        #[arg(value_name = "RULES.json")]
        rules: PathBuf,
        /// Port on 127.0.0.1 (0: any free port)
        #[arg(long, default_value_t = evalua::judge::mock::DEFAULT_PORT)]
        port: u16,
    },
    /// Human labels (a label store, labels/<suite>.jsonl): agreement, held-out split, calibration export
    Labels {
        #[command(subcommand)]
        command: LabelsCommand,
    },
    /// Load and validate a suite (ids, fixtures, schemas, checks); no agent runs
    Check {
        #[command(flatten)]
        machine: flags::Machine,
        #[arg(required = true, value_name = "SUITE.lua")]
        suites: Vec<PathBuf>,
        /// Report cases whose tests do not hold on their initial tree as warnings, not errors
        #[arg(long)]
        skip_invalid: bool,
        #[command(flatten)]
        isolation: flags::Isolation,
        /// Also check that this named agent can run (known, its model endpoint configured)
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Run graders on their must-pass / must-fail examples (*_test.lua files; default graders/)
    Test {
        #[command(flatten)]
        machine: flags::Machine,
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        isolation: flags::Isolation,
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
        #[command(flatten)]
        review: cmd::view::Review,
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
    /// Draft cases from requirement files with a model, validate them by their reference path, add them pending review (SPEC §23)
    Synth(cmd::synth::SynthArgs),
    /// Approve or reject a drafted case: recorded in the label store and in its module (SPEC §23)
    Review(cmd::review::ReviewArgs),
    /// List the cases with split, tags and difficulty
    List {
        #[command(flatten)]
        machine: flags::Machine,
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        #[command(flatten)]
        select: flags::Select,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ReportFormat {
    Files,
    Github,
}

impl Command {
    /// The command's name when `--json` was given: its document's schema is `evalua.<name>/1`.
    fn json(&self) -> Option<&'static str> {
        let (name, on) = match self {
            Command::Run(a) => ("run", a.machine.json),
            Command::Harden(a) => ("harden", a.machine.json),
            Command::Grade(a) => ("grade", a.machine.json),
            Command::Regrade(a) => ("regrade", a.machine.json),
            Command::Calibrate { machine, .. } => ("calibrate", machine.json),
            Command::Check { machine, .. } => ("check", machine.json),
            Command::Test { machine, .. } => ("test", machine.json),
            Command::List { machine, .. } => ("list", machine.json),
            Command::Synth(a) => ("synth", a.machine.json),
            Command::Review(a) => ("review", a.machine.json),
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
    const COMMANDS: [&str; 11] =
        ["run", "check", "list", "compare", "grade", "regrade", "test", "calibrate", "labels", "synth", "review"];
    let command = args.iter().find(|a| COMMANDS.contains(&a.as_str()))?;
    let text = e.render().to_string();
    eprint!("{text}");
    let first = text.lines().next().unwrap_or("").trim_start_matches("error: ");
    println!("{}", serde_json::to_string_pretty(&cmd::json::failed(command, 2, first)).unwrap_or_default());
    Some(ExitCode::from(2))
}

fn main() -> ExitCode {
    // Before any thread: descriptors evalua inherited never reach a child.
    evalua::process::init_fds();
    configure_allocator();
    evalua::util::tls::install();
    std::panic::set_hook(Box::new(|info| {
        // The reader went away (`evalua show … | head`): end quietly, not as a bug.
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if evalua::util::stdio::is_closed_pipe(message) {
            std::process::exit(evalua::util::stdio::closed_exit().into());
        }
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
    // The cgroups of the sandboxes' process limits (`process::pids`), now empty.
    evalua::process::pids::cleanup();
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
            if evalua::util::stdio::is_closed(&e) {
                return ExitCode::from(code);
            }
            eprintln!("error: --json: cannot write the document: {e}");
            return ExitCode::from(3);
        }
    }
    ExitCode::from(code)
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Harden(a) => cmd::harden::harden(a),
        Command::Plan(a) => cmd::plan::plan(a),
        Command::Grade(a) => cmd::grade::grade(a),
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
        Command::Regrade(a) => cmd::regrade::regrade(a),
        Command::Calibrate { suite, labels, rubric, no_cache, held_out, recheck, machine: _ } => {
            let part =
                if held_out { evalua::judge::labels::Part::HeldOut } else { evalua::judge::labels::Part::Calibration };
            let opts = evalua::judge::calibrate::Options {
                rubric: rubric.as_deref(),
                part,
                recheck,
                judge_cache: !no_cache.no_cache,
            };
            cmd::calibrate::calibrate(&suite, &labels, &opts)
        }
        Command::MockJudge { rules, port } => cmd::mock_judge::mock_judge(&rules, port),
        Command::Labels { command } => match command {
            LabelsCommand::Agree { store, json } => cmd::labels::agree(&store, json),
            LabelsCommand::Split { store, held_out, seed, force, json } => {
                cmd::labels::split(&store, held_out, seed, force, json)
            }
            LabelsCommand::Export { store, out, held_out, json } => {
                cmd::labels::export(&store, out.as_ref(), held_out, json)
            }
        },
        Command::Check { suites, skip_invalid, isolation, agent, machine: _ } => {
            cmd::check::check(&suites, skip_invalid, isolation.get(), agent.as_deref())
        }
        Command::Test { paths, isolation, machine: _ } => cmd::test::test(&paths, isolation.get()),
        Command::List { suite, select, machine: _ } => cmd::list::list(&suite, &select.filters()),
        Command::Mcp { root } => cmd::mcp::mcp(root.as_deref()),
        Command::Synth(a) => cmd::synth::synth(a),
        Command::Review(a) => cmd::review::review(a),
        Command::Init { dir, action } => cmd::init::init(&dir, &action),
        Command::View { dirs, port, open, trace_url, annotator, labels, review } => {
            let trace_url = trace_url.or_else(|| std::env::var("EVALUA_TRACE_URL").ok().filter(|u| !u.is_empty()));
            let annotator = annotator.or_else(|| std::env::var("EVALUA_ANNOTATOR").ok().filter(|a| !a.is_empty()));
            cmd::view::view(dirs, port, open, trace_url, annotator, labels, review)
        }
    }
}
