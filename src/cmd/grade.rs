//! `evalua grade SUITE --traces PATH…`: grade recorded traces with the
//! suite's monitors and checks, and write a run dir (manifest `kind =
//! "graded"`) with the usual figures, gates and reports. The items go
//! through the run engine (`run::graded`) and the same sinks as a run's.

use crate::record::files;
use std::path::PathBuf;
use std::sync::Arc;

use super::flags;
use crate::error::{Error, Result};
use crate::grade;
use crate::lua::load;
use crate::otel::read;
use crate::record::manifest::RunKind;
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::{self, sinks};
use crate::run::{Scheduler, graded, manifest};
use crate::stats::rundata;
use crate::util::paths::display_path;

/// `evalua grade`'s flags, as parsed.
#[derive(clap::Args, Debug)]
pub struct GradeArgs {
    /// The suite (also accepted after the trace paths: `--traces FILE SUITE.lua`)
    #[arg(value_name = "SUITE.lua")]
    pub suite: Option<PathBuf>,
    /// Trace files or folders (OTLP JSON or JSON lines, flat span lines), or evalua run dirs
    #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
    pub traces: Vec<PathBuf>,
    /// Write the run dir here (default runs/<suite>/<time>-<id>/)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub jobs: flags::Jobs,
    #[command(flatten)]
    pub follow: flags::Follow,
}

/// Warnings printed in full; the rest are counted (all are in the manifest).
const SHOWN_WARNINGS: usize = 20;

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
        _ => Err(crate::error::Error::Input(
            "evalua grade: which suite? give it first: evalua grade SUITE.lua --traces PATH...".into(),
        )),
    }
}

pub fn grade(a: GradeArgs) -> Result<u8> {
    let (jobs, follow) = (a.jobs.get(), a.follow.options()?);
    let (suite, traces) = grade_suite(a.suite, a.traces)?;
    let suite = load::load(&suite)?;
    let inputs = read::discover(&traces)?;
    let run_id = new_run_id();
    let dir = RunDir::create(a.out.as_deref(), &suite.name, &run_id)?;
    let mut man = manifest::base(&suite, RunKind::Graded, &run_id, &flags::argv(), jobs);
    man.infra_error_policy =
        "a graded trace is never an infra_error: an item that cannot be read is not graded and is listed in warnings"
            .into();
    man.exports.extend(follow.export.entries(&suite.name));
    dir.write_manifest(&man)?;

    let mut followers = sinks::Followers::new(&follow, &dir, &suite.name, &run_id, None)?;
    let ctx = Arc::new(grade::Context::new(suite));
    let graded = graded::grade(&Scheduler::new(jobs), ctx.clone(), &inputs, &dir, &mut followers.sinks())?;
    let followed = followers.finish();

    let warnings = graded.warnings;
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        eprintln!("warning: {w}");
    }
    if warnings.len() > SHOWN_WARNINGS {
        eprintln!("warning: … and {} more (all listed in manifest.json)", warnings.len() - SHOWN_WARNINGS);
    }
    let items: u32 = graded.cases.iter().map(|c| c.trials).sum();
    man.cases = graded.cases;
    man.trace_inputs = graded.inputs;
    man.warnings = warnings;
    dir.write_manifest(&man)?;
    if items == 0 {
        let inputs: Vec<String> = inputs.iter().map(|i| display_path(i.path())).collect();
        return Err(Error::Input(format!("{}: no item could be graded (see the warnings above)", inputs.join(", "))));
    }

    // The figures, from the run dir as written (the same as `evalua report`
    // computes); what grading kept per case is not needed any more.
    drop(man);
    let data = rundata::load(&dir.path)?;
    dir.write_json(files::SUMMARY, &data.summary_file())?;
    print!("{}", report::console_for(&data));
    report::write_all(&data)?;
    for l in &followed.exports {
        println!("{l}");
    }
    Ok(if data.gates_passed() { 0 } else { 1 })
}
