//! `evalua check`: load and validate suites (ids, fixtures, schemas, checks,
//! and `check.tests` on their initial trees); no agent runs.

use std::path::PathBuf;

use crate::error::Result;
use crate::lua::load;
use crate::record::manifest::Filters;
use crate::run;
use crate::util::paths::display_path;

pub fn check(suites: &[PathBuf], skip_invalid: bool, agent: Option<&str>) -> Result<u8> {
    let jobs = run::default_jobs();
    for path in suites {
        let s = load::load(path)?;
        super::run::warn_skipped_rows(&s);
        let mut plan = run::plan(s, None, &Filters::default(), 1)?;
        if let Some(name) = agent {
            run::select_agent(&mut plan, Some(name))?;
        }
        run::screen::screen(&mut plan, skip_invalid, jobs)?;
        let trials: u32 = plan.cases.iter().map(|c| c.trials).sum();
        let checks: u64 = plan.cases.iter().map(|c| c.spec.checks as u64).sum();
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
        if plan.suite.agents.len() > 1 || agent.is_some() {
            println!("  agents: {}", plan.suite.agent_names());
        }
    }
    Ok(0)
}
