//! `evalua grade SUITE --traces PATH…`: grade recorded traces with the
//! suite's monitors and checks, and write a run dir (manifest `kind =
//! "graded"`) with the usual figures, gates and reports. The items go
//! through the run engine (`run::graded`) and the same sinks as a run's.

use std::path::PathBuf;
use std::sync::Arc;

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

pub struct GradeArgs {
    pub suite: PathBuf,
    pub traces: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub jobs: usize,
    /// `-q`, `--otlp…`: how the grading is followed.
    pub follow: sinks::Follow,
    pub argv: Vec<String>,
}

/// Warnings printed in full; the rest are counted (all are in the manifest).
const SHOWN_WARNINGS: usize = 20;

pub fn grade(a: GradeArgs) -> Result<u8> {
    let suite = load::load(&a.suite)?;
    let inputs = read::discover(&a.traces)?;
    let run_id = new_run_id();
    let dir = RunDir::create(a.out.as_deref(), &suite.name, &run_id)?;
    let mut man = manifest::base(&suite, RunKind::Graded, &run_id, &a.argv, a.jobs);
    man.infra_error_policy =
        "a graded trace is never an infra_error: an item that cannot be read is not graded and is listed in warnings"
            .into();
    man.exports.extend(a.follow.export.entries(&suite.name));
    dir.write_manifest(&man)?;

    let mut followers = sinks::Followers::new(&a.follow, &dir, &suite.name, &run_id, None)?;
    let ctx = Arc::new(grade::Context::new(suite));
    let graded = graded::grade(&Scheduler::new(a.jobs), ctx.clone(), &inputs, &dir, &mut followers.sinks())?;
    let followed = followers.finish();

    let warnings = graded.warnings;
    for w in warnings.iter().take(SHOWN_WARNINGS) {
        super::json::warn(w.clone());
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
    dir.write_json("summary.json", &data.summary_file())?;
    print!("{}", report::console_for(&data));
    report::write_all(&data)?;
    for l in &followed.exports {
        println!("{l}");
    }
    super::json::set("run", super::json::run_entry(&data));
    Ok(if data.gates_passed() { 0 } else { 1 })
}
