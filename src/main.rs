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
    /// Grade recorded traces (OTLP JSON, flat span lines, evalua run dirs) with the suite's monitors and checks
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
        #[arg(long, value_name = "N", default_value = "3", value_parser = clap::value_parser!(u32).range(1..))]
        per_cluster: u32,
    },
    /// Re-render report.md, report.html and junit.xml from a run dir
    Report {
        #[arg(value_name = "RUN_DIR")]
        dir: PathBuf,
        /// On an incomplete run, decide the gates on the trials that ran instead of failing them
        #[arg(long)]
        allow_incomplete: bool,
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
    },
    /// List the cases with split, tags and difficulty
    List {
        #[arg(value_name = "SUITE.lua")]
        suite: PathBuf,
        #[command(flatten)]
        select: flags::Select,
    },
}

/// Set how processes are isolated (`--isolation`).
fn isolate(i: flags::Isolation) {
    evalua::process::set_isolation(i.get());
}

fn main() -> ExitCode {
    // Before any thread: descriptors evalua inherited never reach a child.
    evalua::process::init_fds();
    configure_allocator();
    std::panic::set_hook(Box::new(|info| {
        eprintln!("evalua: internal error (please report it): {info}");
    }));
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Several errors at once (`evalua check`): each on its own line.
            for line in e.to_string().lines() {
                eprintln!("error: {line}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Grade(a) => cmd::grade::grade(a),
        Command::Export { dir, otlp } => cmd::export::export(&dir, otlp.options()?),
        Command::Promote { dir, into, mode, per_cluster } => {
            cmd::promote::promote(&dir, &into, mode.as_deref(), per_cluster as usize)
        }
        Command::Report { dir, allow_incomplete } => cmd::report::report(&dir, allow_incomplete),
        Command::Compare { base, cand, allow_revision_change, json, markdown } => {
            cmd::compare::compare(&base, &cand, allow_revision_change, json, markdown)
        }
        Command::Merge { dirs, out } => cmd::merge::merge(&dirs, &out),
        Command::Show { dir, case, trial, json } => cmd::show::show(&dir, &case, trial, json),
        Command::Regrade(a) => cmd::regrade::regrade(a),
        Command::Calibrate { suite, labels, rubric, no_cache, held_out, recheck } => {
            evalua::judge::cache::set_disabled(no_cache.no_cache);
            let part =
                if held_out { evalua::judge::labels::Part::HeldOut } else { evalua::judge::labels::Part::Calibration };
            let opts = evalua::judge::calibrate::Options { rubric: rubric.as_deref(), part, recheck };
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
        Command::Check { suites, skip_invalid, isolation, agent } => {
            isolate(isolation);
            cmd::check::check(&suites, skip_invalid, agent.as_deref())
        }
        Command::Test { paths, isolation } => {
            isolate(isolation);
            cmd::test::test(&paths)
        }
        Command::List { suite, select } => cmd::list::list(&suite, &select.filters()),
        Command::View { dirs, port, open, trace_url, annotator, labels } => {
            let trace_url = trace_url.or_else(|| std::env::var("EVALUA_TRACE_URL").ok().filter(|u| !u.is_empty()));
            let annotator = annotator.or_else(|| std::env::var("EVALUA_ANNOTATOR").ok().filter(|a| !a.is_empty()));
            cmd::view::view(dirs, port, open, trace_url, annotator, labels)
        }
    }
}
