//! `evalua check`: load and validate suites (ids, fixtures, schemas, checks,
//! command agents' programs and scripts, and `check.tests` on their initial
//! trees); no agent runs. Every independent error is said at once, each with
//! its `file:line`, then the exit code is 2.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::manifest::Filters;
use crate::run;
use crate::util::paths::display_path;

/// An input error's lines into `errors`; any other error ends the check.
fn keep(errors: &mut Vec<String>, e: Error) -> Result<()> {
    match e {
        Error::Input(m) => {
            errors.extend(m.lines().map(String::from));
            Ok(())
        }
        other => Err(other),
    }
}

pub fn check(
    suites: &[PathBuf],
    skip_invalid: bool,
    isolation: crate::process::Isolation,
    agent: Option<&str>,
) -> Result<u8> {
    let jobs = run::default_jobs();
    let mut errors = Vec::new();
    for path in suites {
        let (s, mut found) = match load::load_checked(path) {
            Ok(x) => x,
            Err(e) => {
                keep(&mut errors, e)?;
                continue;
            }
        };
        super::run::warn_skipped_rows(&s);
        // A command agent whose program or script the sandbox would not find.
        found.extend(run::screen::agent_programs(&s, isolation, agent));
        // Every case failed to declare: each said why; a plan would only add "no case".
        let plan = if !found.is_empty() && s.cases.is_empty() {
            None
        } else {
            match run::plan(s, None, &Filters::default(), 1) {
                Ok(p) => Some(p),
                Err(e) => {
                    keep(&mut found, e)?;
                    None
                }
            }
        };
        let (Some(mut plan), true) = (plan, found.is_empty()) else {
            errors.extend(found);
            continue;
        };
        plan.switches.isolation = isolation;
        if let Some(name) = agent
            && let Err(e) = run::select_agent(&mut plan, Some(name))
        {
            keep(&mut errors, e)?;
            continue;
        }
        if let Err(e) = run::screen::screen(&mut plan, skip_invalid, jobs) {
            keep(&mut errors, e)?;
            continue;
        }
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
        if plan.suite.agents.len() > 1 || agent.is_some() {
            println!("  agents: {}", plan.suite.agent_names());
        }
    }
    if errors.is_empty() {
        return Ok(0);
    }
    Err(load::errors_of(errors))
}
