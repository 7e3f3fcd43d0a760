//! `evalua plan SUITE --detect D [--power P]` (SPEC §20): before any run,
//! how many cases and trials per case detect a difference `D` in pass^1
//! with power `P`, from the suite's last run's per-case rates (or a stated
//! assumption), with the reasoning printed.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::stats::power::{self, Z_ALPHA, normal_quantile};

/// `evalua plan`'s flags, as parsed.
#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    #[arg(value_name = "SUITE.lua")]
    pub suite: PathBuf,
    /// The difference in pass^1 to detect, in (0, 1): 0.1 is ten points
    #[arg(long, value_name = "D")]
    pub detect: f64,
    /// The chance of detecting it when it is there
    #[arg(long, value_name = "P", default_value_t = 0.8)]
    pub power: f64,
    /// Take the per-case rates from this run dir (default: the suite's newest run under runs/<suite>/)
    #[arg(long, value_name = "RUN_DIR")]
    pub from: Option<PathBuf>,
    /// No run to learn from: assume every case passes at this rate
    #[arg(long, value_name = "RATE", conflicts_with = "from")]
    pub assume: Option<f64>,
}

pub fn plan(a: PlanArgs) -> Result<u8> {
    let open = |what: &str, v: f64| {
        (v > 0.0 && v < 1.0)
            .then_some(())
            .ok_or_else(|| Error::Input(format!("--{what} must be between 0 and 1, got {v}")))
    };
    open("detect", a.detect)?;
    open("power", a.power)?;
    if let Some(r) = a.assume {
        (0.0..=1.0)
            .contains(&r)
            .then_some(())
            .ok_or_else(|| Error::Input(format!("--assume must be a rate in [0, 1], got {r}")))?;
    }
    let suite = crate::lua::load::load(&a.suite)?;
    let ids: Vec<&str> = suite.cases.iter().map(|c| c.id.as_str()).collect();
    let (rates, from) = match (a.assume, a.from.clone().or_else(|| newest_run(&suite.name))) {
        (Some(r), _) => (vec![r; ids.len()], format!("assumed: every case at {r:.2}")),
        (None, Some(dir)) => rates_from(&dir, &ids)?,
        (None, None) => {
            return Err(Error::Input(format!(
                "no run of {} under runs/{}/ to learn its cases' rates from: give --from RUN_DIR or --assume RATE",
                a.suite.display(),
                suite.name
            )));
        }
    };
    let p = power::plan(&rates, a.detect, a.power);
    let z = Z_ALPHA + normal_quantile(a.power);
    println!(
        "plan for {} ({} cases): detect a difference of {:.1} points in pass^1 with power {:.0}% (two-sided test at 5%)",
        suite.name,
        ids.len(),
        100.0 * a.detect,
        100.0 * a.power
    );
    println!("  per-case rates {from}");
    println!(
        "  two runs of the same cases, paired by case: the cases' own spread cancels, the trials' noise is left: mean p(1 − p) = {:.3}",
        p.mean_variance
    );
    println!(
        "  needed: cases × trials per case ≥ 2 · {:.3} · ({Z_ALPHA:.3} + {:.3})² / {:.3}² = {} trials per run",
        p.mean_variance,
        z - Z_ALPHA,
        a.detect,
        p.trials_needed
    );
    println!(
        "  with the suite's {} cases: {} trials per case (trials = {})",
        p.cases, p.trials_per_case, p.trials_per_case
    );
    let shapes: Vec<String> = p.options.iter().map(|(n, k)| format!("{n} trial(s) per case → {k} cases")).collect();
    println!("  other shapes: {}", shapes.join("; "));
    println!(
        "  this assumes the difference is the same on every case; one that varies by case needs more cases than this, and an adaptive run (SPEC §20) stops earlier when the difference is larger"
    );
    Ok(0)
}

/// The newest run dir of the suite under `runs/<name>/` (its names sort by time).
fn newest_run(name: &str) -> Option<PathBuf> {
    let dir = Path::new("runs").join(name);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(crate::record::files::SUMMARY).is_file())
        .collect();
    runs.sort();
    runs.pop()
}

/// Each case's accepted rate in the run (capability view); a case the run
/// did not play, or played without a counted trial, is assumed at 0.5 (the
/// noisiest rate: a plan that errs towards more trials).
fn rates_from(dir: &Path, ids: &[&str]) -> Result<(Vec<f64>, String)> {
    let run = crate::stats::rundata::load_with(dir, true)?;
    let mut assumed = 0;
    let rates = ids
        .iter()
        .map(|id| match run.case_index(id).map(|i| &run.summary.cases[i]) {
            Some(c) if c.n > 0 => c.accepted as f64 / c.n as f64,
            _ => {
                assumed += 1;
                0.5
            }
        })
        .collect();
    let mut from = format!("from {}", crate::util::paths::display_path(dir));
    if assumed > 0 {
        from.push_str(&format!(" ({assumed} case(s) without a counted trial there: 0.5 assumed)"));
    }
    Ok((rates, from))
}
