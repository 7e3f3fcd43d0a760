//! `evalua check`: load and validate suites (ids, fixtures, schemas, checks,
//! and `check.tests` on their initial trees); no agent runs.

use std::path::PathBuf;

use crate::error::Result;
use crate::lua::load;
use crate::record::manifest::Filters;
use crate::run;
use crate::util::paths::display_path;

pub fn check(suites: &[PathBuf], skip_invalid: bool) -> Result<u8> {
    let jobs = run::default_jobs();
    for path in suites {
        let s = load::load(path)?;
        super::run::warn_skipped_rows(&s);
        let mut plan = run::plan(s, None, &Filters::default(), 1)?;
        run::screen::screen(&mut plan, skip_invalid, jobs)?;
        let trials: u32 = plan.cases.iter().map(|c| c.trials).sum();
        let checks: u64 = plan.cases.iter().map(|c| c.spec.checks as u64).sum();
        super::json::push(
            "suites",
            serde_json::json!({
                "suite": plan.suite.name,
                "path": display_path(&plan.suite.path),
                "ok": true,
                "cases": plan.cases.len(),
                "tools": plan.suite.tools.len(),
                "checks": checks,
                "trials": trials,
                "invalid_cases": plan.invalid,
            }),
        );
        println!(
            "ok: {} ({} cases, {} tools, {} checks, {} trials per run{})",
            display_path(&plan.suite.path),
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
