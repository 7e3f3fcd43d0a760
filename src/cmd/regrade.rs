//! `evalua regrade RUN_DIR`: the suite's current checks on a finished run's
//! recorded trials (SPEC §10). No agent runs; a new run dir records
//! `regraded_from` and both grader hashes, with the usual figures, gates and
//! reports.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::flags;
use crate::error::Result;
use crate::record::rundir::{RunDir, new_run_id};
use crate::report::sinks;
use crate::run::{AsMade, Scheduler, regrade};

/// `evalua regrade`'s flags, as parsed.
#[derive(clap::Args, Debug)]
pub struct RegradeArgs {
    #[arg(value_name = "RUN_DIR")]
    pub dir: PathBuf,
    /// The suite whose checks to run (default: the suite file the run recorded)
    #[arg(long, value_name = "SUITE.lua")]
    pub suite: Option<PathBuf>,
    /// Write the new run dir here (default runs/<suite>/<time>-<id>/)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Re-grade even if a case's fixture, schema or work tree changed since the run
    #[arg(long)]
    pub allow_fixture_change: bool,
    #[command(flatten)]
    pub jobs: flags::Jobs,
    #[command(flatten)]
    pub no_cache: flags::NoCache,
    #[command(flatten)]
    pub isolation: flags::Isolation,
    #[command(flatten)]
    pub follow: flags::Follow,
}

pub fn regrade(a: RegradeArgs) -> Result<u8> {
    crate::process::set_isolation(a.isolation.get());
    crate::judge::cache::set_disabled(a.no_cache.no_cache);
    let (jobs, follow, argv) = (a.jobs.get(), a.follow.options()?, flags::argv());
    let started = Instant::now();
    let r = regrade::prepare(&a.dir, a.suite.as_deref(), a.allow_fixture_change, &argv)?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let run_id = new_run_id();
    let dir = RunDir::create(a.out.as_deref(), &r.plan.suite.name, &run_id)?;
    let mut manifest = r.manifest(&run_id, jobs, &argv);
    manifest.exports.extend(follow.export.entries(&r.plan.suite.name));
    dir.write_manifest(&manifest)?;

    let mut followers = sinks::Followers::new(&follow, &dir, &r.plan.suite.name, &run_id, None)?;
    let source = std::sync::Arc::new(r.source(jobs));
    Scheduler::new(jobs).execute(&dir, source, &mut AsMade, &mut followers.sinks())?;
    let followed = followers.finish();
    let data = super::run::conclude(&dir, false, &followed.tests)?;
    for l in &followed.exports {
        println!("{l}");
    }
    let old_grader = short(&r.old_manifest.grader_sha256);
    println!(
        "regraded {} trials of {} ({}) in {:.1} s: grader {} → {}",
        r.records.len(),
        shown(&a.dir),
        r.old_manifest.run_id,
        started.elapsed().as_secs_f64(),
        old_grader,
        short(&manifest.grader_sha256),
    );
    println!("compare: evalua compare {} {}", shown(&a.dir), shown(&dir.path));
    Ok(if data.gates_passed() { 0 } else { 1 })
}

fn short(h: &str) -> String {
    if h.is_empty() { "unknown".into() } else { h.chars().take(12).collect() }
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}
