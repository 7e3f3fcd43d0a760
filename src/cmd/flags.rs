//! The flag groups several commands share, each declared once (clap
//! `flatten`): a command's arguments struct holds them as parsed, and its
//! function reads them (`Jobs::get`, `Select::filters`, `Follow::options`,
//! `Isolation::apply`). A flag of every kind of run (run, regrade, grade)
//! belongs in [`Follow`].

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::record::manifest::Filters;

/// `--case`, `--tag`, `--split`: which cases.
#[derive(Args, Clone, Debug, Default)]
pub struct Select {
    /// Only cases whose id matches this glob (e.g. 'refund_*')
    #[arg(long = "case", value_name = "GLOB")]
    pub case: Option<String>,
    /// Only cases with this tag (repeatable: any of them)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only cases of this split
    #[arg(long, value_parser = ["dev", "held_out"])]
    pub split: Option<String>,
}

impl Select {
    pub fn filters(&self) -> Filters {
        Filters { case: self.case.clone(), tags: self.tags.clone(), split: self.split.clone() }
    }
}

/// A count given on the command line (`--trials`, `--jobs`, `--per-cluster`):
/// a whole number of at least 1, said in words (clap's range reads `1..=4294967295`).
pub fn positive(s: &str) -> std::result::Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => u32::try_from(n).map_err(|_| format!("must be at most {}", u32::MAX)),
        Err(_) => Err("must be a whole number of at least 1".into()),
    }
}

/// `--jobs N`.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct Jobs {
    /// Trials (or items) worked on at once (default: the number of cores)
    #[arg(long, value_parser = positive)]
    pub jobs: Option<u32>,
}

impl Jobs {
    pub fn get(&self) -> usize {
        self.jobs.map(|j| j as usize).unwrap_or_else(crate::run::default_jobs)
    }
}

/// Sending trials as OpenTelemetry traces (SPEC §9).
#[derive(Args, Clone, Debug, Default)]
pub struct Otlp {
    /// Send every trial as an OpenTelemetry trace over OTLP/HTTP (protobuf) to this URL
    /// (a URL without a path gets /v1/traces); default: the OTEL_EXPORTER_OTLP_* variables
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// Also write the traces to FILE as OTLP JSON lines (one ExportTraceServiceRequest per line)
    #[arg(long, value_name = "FILE")]
    pub otlp_file: Option<PathBuf>,
    /// Leave inputs, answers, tool arguments and results, error texts and check explanations out
    #[arg(long)]
    pub otlp_no_content: bool,
}

impl Otlp {
    pub fn options(&self) -> Result<crate::otel::export::Options> {
        Ok(crate::otel::export::Options {
            endpoint: crate::otel::export::endpoint(self.otlp.as_deref())?,
            file: self.otlp_file.clone(),
            content: !self.otlp_no_content,
        })
    }
}

/// How a run is followed (every kind of run: run, regrade, grade); see
/// `report::sinks::Followers`.
#[derive(Args, Clone, Debug, Default)]
pub struct Follow {
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub otlp: Otlp,
}

impl Follow {
    pub fn options(&self) -> Result<crate::report::sinks::Follow> {
        Ok(crate::report::sinks::Follow { quiet: self.quiet, export: self.otlp.options()? })
    }
}

/// `--isolation sandbox|none`.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct Isolation {
    /// How agents, their tools' commands, check commands and test runners are isolated:
    /// `sandbox` (bubblewrap, the default) or `none` (unconfined)
    #[arg(long, value_enum, default_value = "sandbox")]
    pub isolation: IsolationArg,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum IsolationArg {
    #[default]
    Sandbox,
    None,
}

impl Isolation {
    /// The isolation asked for; opting out is said loudly.
    pub fn get(&self) -> crate::process::Isolation {
        if self.isolation == IsolationArg::None {
            eprintln!(
                "warning: --isolation none: agents, their tools' commands, check commands and test runners run unconfined, \
                 as your user, with your files, processes and network (recorded in the manifest)"
            );
            return crate::process::Isolation::None;
        }
        crate::process::Isolation::Sandbox
    }
}

/// `--json`: output for machines (SPEC §16).
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct Machine {
    /// Print one JSON document on stdout (schema "evalua.<command>/1"; docs/reference/cli.md); human text goes to stderr
    #[arg(long)]
    pub json: bool,
}

/// `--no-cache`.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct NoCache {
    /// Call judge models even when a cached verdict exists (and store none)
    #[arg(long)]
    pub no_cache: bool,
}

/// The run's switches from `--isolation` and `--no-cache`.
pub fn switches(isolation: &Isolation, no_cache: &NoCache) -> crate::trial::plan::Switches {
    crate::trial::plan::Switches { isolation: isolation.get(), judge_cache: !no_cache.no_cache }
}

/// The command line, for the manifest.
pub fn argv() -> Vec<String> {
    std::env::args().collect()
}
