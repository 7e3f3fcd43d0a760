//! `evalua harden SUITE` (SPEC §19): the built-in adversaries (and the
//! suite's own) try to pass every case without doing its task; a case that
//! accepts one has a hole. Exit 1 when any case has a hole (or an adversary
//! could not be played), 0 when none, 2 on a bad suite.

use std::path::{Path, PathBuf};

use super::flags;
use crate::error::{Error, Result};
use crate::harden;
use crate::lua::load;
use crate::record::harden::Hardened;
use crate::record::manifest::Filters;
use crate::run;
use crate::trial::Switches;
use crate::util::paths::display_path;

/// `evalua harden`'s flags.
#[derive(clap::Args, Debug)]
pub struct HardenArgs {
    #[command(flatten)]
    pub machine: flags::Machine,
    #[arg(value_name = "SUITE.lua")]
    pub suite: PathBuf,
    /// Only cases whose id matches this glob (e.g. 'refund_*')
    #[arg(long = "case", value_name = "GLOB")]
    pub case: Option<String>,
    /// Play only this adversary (repeatable; default: every built-in one that applies and the suite's own)
    #[arg(long = "adversary", value_name = "NAME")]
    pub adversary: Vec<String>,
    /// Seed of the adversaries' trials [default: 1]
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub jobs: flags::Jobs,
    #[command(flatten)]
    pub isolation: flags::Isolation,
}

pub fn harden(a: HardenArgs) -> Result<u8> {
    if let Err(e) = crate::util::cancel::install_signal_handlers() {
        eprintln!("warning: cannot handle SIGINT/SIGTERM ({e})");
    }
    let filters = Filters { case: a.case.clone(), ..Filters::default() };
    let switches = Switches { isolation: a.isolation.get(), judge_cache: false };
    let opts = harden::Options { adversaries: a.adversary.clone(), jobs: a.jobs.get() };
    let h = suite(&a.suite, &filters, a.seed.unwrap_or(1), switches, &opts)?;
    print!("{}", crate::report::harden::text(&h));
    document(&h);
    Ok(code(&h))
}

/// Exit 1 when a case has a hole or an adversary could not be played.
pub fn code(h: &Hardened) -> u8 {
    u8::from(h.holes > 0 || !h.not_played.is_empty() || crate::util::cancel::requested())
}

/// `--json`: `{ cases: [{case, holes: [{adversary, passed_checks, advice}]}], adversaries, holes, … }`.
fn document(h: &Hardened) {
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(h) {
        for (k, v) in m {
            super::json::set(&k, v);
        }
    }
}

/// Load, check and plan the suite at `path` (a bad one is exit 2 before any
/// trial), then harden it. Shared with `run --harden`.
pub fn suite(
    path: &Path,
    filters: &Filters,
    seed: u64,
    switches: Switches,
    opts: &harden::Options,
) -> Result<Hardened> {
    let (s, mut errors) = load::load_checked(path)?;
    errors.extend(run::screen::agent_programs(&s, switches.isolation, None));
    if !errors.is_empty() {
        return Err(load::errors_of(errors));
    }
    let mut plan = run::plan(s, Some(1), filters, seed)?;
    if plan.cases.is_empty() {
        return Err(Error::Input(format!("{}: no case to harden", display_path(path))));
    }
    plan.switches = switches;
    run::screen::require_sandbox(&plan)?;
    eprintln!("harden {}: {} cases", display_path(path), plan.cases.len());
    harden::harden(plan, opts)
}
