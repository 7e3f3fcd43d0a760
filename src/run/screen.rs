//! Before the first trial, every `check.tests` of every case is validated on
//! its initial tree (SWE-bench semantics): each FAIL_TO_PASS test must fail
//! there and each PASS_TO_PASS test must pass, or the case cannot tell a fix
//! from no fix.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::record::Invalid;
use crate::sandbox::tests::run_tests;
use crate::trial::{CasePlan, Plan};
use crate::util::paths::display_path;
use crate::util::tree::{copy_tree, overlay};

/// Check every `check.tests` of every case on its initial tree: each
/// FAIL_TO_PASS test must fail and each PASS_TO_PASS test must pass there.
pub fn validate(plan: &Plan, jobs: usize) -> Vec<Invalid> {
    // (case index, check index) pairs to validate.
    let work: Vec<(usize, usize)> =
        plan.cases.iter().enumerate().flat_map(|(ci, c)| (0..c.spec.tests.len()).map(move |ki| (ci, ki))).collect();
    if work.is_empty() {
        return Vec::new();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, work.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(ci, ki)) = work.get(i) else { break };
                    let case = &plan.cases[ci];
                    if let Some(reason) = validate_one(plan, case, ki, i) {
                        found.lock().unwrap().push((
                            ci,
                            ki,
                            Invalid { case: case.spec.id.clone(), location: case.spec.location.clone(), reason },
                        ));
                    }
                }
            });
        }
    });
    let mut found = found.into_inner().unwrap();
    found.sort_by_key(|(ci, ki, _)| (*ci, *ki));
    // One report per case: its first broken check.
    let mut out: Vec<Invalid> = Vec::new();
    for (_, _, inv) in found {
        if !out.iter().any(|o| o.case == inv.case) {
            out.push(inv);
        }
    }
    out
}

fn validate_one(plan: &Plan, case: &CasePlan, check: usize, n: usize) -> Option<String> {
    let info = &case.spec.tests[check];
    let spec = &info.spec;
    let dir = plan.scratch.path().join(format!("validate-{n}"));
    let prepared = (|| -> std::io::Result<()> {
        match &case.work {
            Some(t) => copy_tree(&t.dir, &dir)?,
            None => std::fs::create_dir_all(&dir)?,
        }
        if let Some(inj) = &spec.inject {
            overlay(inj, &dir)?;
        }
        Ok(())
    })();
    if let Err(e) = prepared {
        let _ = std::fs::remove_dir_all(&dir);
        return Some(format!("cannot prepare the initial tree: {e}"));
    }
    let timeout = Duration::from_secs_f64(spec.timeout_s.max(0.001));
    let view = crate::trial::view_of(plan);
    let run = |ids: &[String]| run_tests(&dir, &spec.runner, ids, timeout, &view);
    let verdict = (|| {
        for t in run(&spec.fail_to_pass)? {
            if t.passed {
                return Ok(Some(format!(
                    "FAIL_TO_PASS test '{}' already passes on the initial tree (it cannot show a fix)",
                    t.id
                )));
            }
        }
        for t in run(&spec.pass_to_pass)? {
            if !t.passed {
                let last = t.output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
                return Ok(Some(format!(
                    "PASS_TO_PASS test '{}' fails on the initial tree ({}{})",
                    t.id,
                    t.status,
                    if last.is_empty() { String::new() } else { format!(": {last}") }
                )));
            }
        }
        Ok::<_, crate::process::StartError>(None)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    match verdict {
        Ok(v) => v,
        Err(e) => Some(format!("check '{}': {e}", info.name)),
    }
}

/// Refuse, in one line, a run whose processes cannot be sandboxed: a plan
/// with a command agent or a test runner (`check.tests`) needs bubblewrap
/// unless the run said `--isolation none`. (A plan keeps no other check
/// kinds: a `check.command` or a tool handler's `ctx.exec` is refused when it
/// starts, as the check's grader error or the call's error.)
pub fn require_sandbox(plan: &Plan) -> Result<()> {
    use crate::process::{Isolation, isolation, sandbox_ready};
    if isolation() == Isolation::None {
        return Ok(());
    }
    let needs = plan.cases.iter().any(|c| {
        matches!(plan.agent_for(c, 1).spec, Some(crate::spec::AgentSpec::Command(_))) || !c.spec.tests.is_empty()
    });
    match sandbox_ready() {
        Err(why) if needs => Err(Error::Environment(format!(
            "{}: the process sandbox cannot start: {why}; install bubblewrap, or run unconfined with --isolation none",
            display_path(&plan.suite.path)
        ))),
        _ => Ok(()),
    }
}

/// Validate the plan's cases before the first trial. Invalid cases are a
/// user error (exit 2) unless `skip`, which drops them from the plan, keeps
/// them in `plan.invalid` (the manifest lists them) and warns on stderr.
pub fn screen(plan: &mut Plan, skip: bool, jobs: usize) -> Result<()> {
    let invalid = validate(plan, jobs);
    if invalid.is_empty() {
        return Ok(());
    }
    let suite = display_path(&plan.suite.path);
    let list = invalid.iter().map(|i| format!("'{}' ({}): {}", i.case, i.location, i.reason)).collect::<Vec<_>>();
    if !skip {
        let what =
            if invalid.len() == 1 { "invalid case".to_string() } else { format!("{} invalid cases", invalid.len()) };
        return Err(Error::Input(format!("{suite}: {what}: {}; fix the case or pass --skip-invalid", list.join("; "))));
    }
    for line in &list {
        eprintln!("warning: {suite}: skipped invalid case {line}");
    }
    plan.cases.retain(|c| !invalid.iter().any(|i| i.case == c.spec.id));
    plan.reindex();
    plan.invalid = invalid;
    if plan.cases.is_empty() {
        return Err(Error::Input(format!("{suite}: every selected case is invalid (see the warnings above)")));
    }
    Ok(())
}
