//! Grading coding agents the SWE-bench way: hidden tests injected into a copy
//! of the final tree at grading time, FAIL_TO_PASS / PASS_TO_PASS test ids
//! run one by one (`runner ++ [id]`, pass = exit status 0), and, before the
//! first trial, every case validated on its initial tree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value as Json;

use crate::error::{Result, UserError};
use crate::lua::display_path;
use crate::process;
use crate::trial::{CasePlan, Plan};

/// Bytes kept of a test's output (stdout, then stderr) in the evidence.
pub const TEST_TAIL: usize = 2000;
/// Output after which a test run is killed.
pub const TEST_MAX_OUTPUT: usize = 8 * 1024 * 1024;

/// `check.tests{...}` as the host reads it.
#[derive(Debug, Clone)]
pub struct TestsSpec {
    pub runner: Vec<String>,
    pub inject: Option<PathBuf>,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    pub timeout_s: f64,
}

impl TestsSpec {
    pub fn from_json(v: &Json) -> std::result::Result<Self, String> {
        let list = |k: &str| -> Vec<String> {
            v[k].as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
        };
        let runner = list("runner");
        if runner.is_empty() {
            return Err("check.tests: 'runner' must be a non-empty list".into());
        }
        Ok(TestsSpec {
            runner,
            inject: v["inject"].as_str().map(PathBuf::from),
            fail_to_pass: list("fail_to_pass"),
            pass_to_pass: list("pass_to_pass"),
            timeout_s: v["timeout_s"].as_f64().unwrap_or(60.0),
        })
    }
}

/// One test id's run.
#[derive(Debug, Clone, Serialize)]
pub struct TestRun {
    pub id: String,
    pub passed: bool,
    /// `exit 0`, `exit 1`, `timed out after 60.0s`, ...
    pub status: String,
    pub duration_ms: f64,
    /// The end of its output (stdout then stderr).
    pub output: String,
}

/// Run each test id as `runner ++ [id]` in `dir`; Err when the runner cannot start.
pub fn run_tests(
    dir: &Path,
    runner: &[String],
    ids: &[String],
    timeout: Duration,
) -> std::result::Result<Vec<TestRun>, String> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let mut argv = runner.to_vec();
        argv.push(id.clone());
        let spec = process::Spec { argv: &argv, cwd: dir, timeout, max_output: TEST_MAX_OUTPUT, tail: TEST_TAIL };
        let o = process::run(&spec)?;
        let mut output = o.stdout.clone();
        output.push_str(&o.stderr);
        if output.len() > TEST_TAIL {
            let mut cut = output.len() - TEST_TAIL;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            output = format!("…{}", &output[cut..]);
        }
        out.push(TestRun {
            id: id.clone(),
            passed: o.success(),
            status: o.describe(),
            duration_ms: o.duration_ms,
            output,
        });
    }
    Ok(out)
}

/// Copy `from`'s tree over `to` (hidden tests): files replace files; a
/// symlink in the way (planted by the agent) is removed first, so nothing is
/// ever written through it.
pub fn overlay(from: &Path, to: &Path) -> std::io::Result<()> {
    let clear = |p: &Path| -> std::io::Result<()> {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(p),
            _ => Ok(()),
        }
    };
    clear(to)?;
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let dest = to.join(e.file_name());
        clear(&dest)?;
        if ft.is_dir() {
            if dest.is_file() {
                std::fs::remove_file(&dest)?;
            }
            overlay(&e.path(), &dest)?;
        } else if ft.is_file() {
            if dest.is_dir() {
                std::fs::remove_dir_all(&dest)?;
            }
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

/// A case whose tests do not hold on its initial tree: it cannot tell a fix from no fix.
#[derive(Debug, Clone, Serialize)]
pub struct Invalid {
    pub case: String,
    pub location: String,
    pub reason: String,
}

/// Check every `check.tests` of every case on its initial tree: each
/// FAIL_TO_PASS test must fail and each PASS_TO_PASS test must pass there.
pub fn validate(plan: &Plan, jobs: usize) -> Vec<Invalid> {
    // (case index, check index) pairs to validate.
    let work: Vec<(usize, usize)> = plan
        .cases
        .iter()
        .enumerate()
        .flat_map(|(ci, c)| {
            c.spec
                .checks
                .iter()
                .enumerate()
                .filter(|(_, k)| k.kind.as_deref() == Some("tests"))
                .map(move |(ki, _)| (ci, ki))
        })
        .collect();
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
    let info = &case.spec.checks[check];
    let spec = match info.options.as_ref().map(TestsSpec::from_json) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Some(e),
        None => return Some(format!("check '{}': no options", info.name)),
    };
    let dir = plan.scratch.path().join(format!("validate-{n}"));
    let prepared = (|| -> std::io::Result<()> {
        match &case.work {
            Some(t) => crate::workdir::copy_tree(&t.dir, &dir)?,
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
    let run = |ids: &[String]| run_tests(&dir, &spec.runner, ids, timeout);
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
        Ok::<_, String>(None)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    match verdict {
        Ok(v) => v,
        Err(e) => Some(format!("check '{}': {e}", info.name)),
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
        return Err(UserError(format!("{suite}: {what}: {}; fix the case or pass --skip-invalid", list.join("; "))));
    }
    for line in &list {
        eprintln!("warning: {suite}: skipped invalid case {line}");
    }
    plan.cases.retain(|c| !invalid.iter().any(|i| i.case == c.spec.id));
    plan.invalid = invalid;
    if plan.cases.is_empty() {
        return Err(UserError(format!("{suite}: every selected case is invalid (see the warnings above)")));
    }
    Ok(())
}

/// Per-test results of a run's `check.tests` checks, for the console: how
/// often each FAIL_TO_PASS / PASS_TO_PASS test passed, per case. Empty when
/// the run has no such check.
pub fn test_report(run_dir: &Path) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let Ok(text) = std::fs::read_to_string(run_dir.join("trials.jsonl")) else { return String::new() };
    // case -> (group, id) -> (passed, runs), in first-seen order of cases.
    type Counts = BTreeMap<(String, String), (u32, u32)>;
    let mut cases: Vec<(String, Counts)> = Vec::new();
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<Json>(line) else { continue };
        let case = rec["case"].as_str().unwrap_or("").to_string();
        for check in rec["checks"].as_array().into_iter().flatten() {
            let Some(tests) = check["evidence"]["tests"].as_array() else { continue };
            if check["evidence"]["fail_to_pass"].is_null() {
                continue;
            }
            let i = match cases.iter().position(|(c, _)| *c == case) {
                Some(i) => i,
                None => {
                    cases.push((case.clone(), BTreeMap::new()));
                    cases.len() - 1
                }
            };
            for t in tests {
                let key = (t["group"].as_str().unwrap_or("").to_string(), t["id"].as_str().unwrap_or("").to_string());
                let e = cases[i].1.entry(key).or_default();
                e.1 += 1;
                if t["passed"] == true {
                    e.0 += 1;
                }
            }
        }
    }
    let mut out = String::new();
    if cases.is_empty() {
        return out;
    }
    let _ = writeln!(out, "tests (check.tests, graded trials):");
    for (case, tests) in cases {
        let _ = writeln!(out, "  {case}");
        let width = tests.keys().map(|(_, id)| id.len()).max().unwrap_or(0);
        // FAIL_TO_PASS first.
        for ((group, id), (passed, runs)) in tests
            .iter()
            .filter(|((g, _), _)| g == "FAIL_TO_PASS")
            .chain(tests.iter().filter(|((g, _), _)| g != "FAIL_TO_PASS"))
        {
            let _ = writeln!(out, "    {group:<12} {id:<width$}  passed {passed}/{runs}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_never_writes_through_a_planted_symlink() {
        let hidden = tempfile::tempdir().unwrap();
        std::fs::create_dir(hidden.path().join("tests")).unwrap();
        std::fs::write(hidden.path().join("tests/test_hidden.py"), "hidden").unwrap();
        let tree = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("tests")).unwrap();
        overlay(hidden.path(), tree.path()).unwrap();
        assert!(!outside.path().join("test_hidden.py").exists());
        assert_eq!(std::fs::read_to_string(tree.path().join("tests/test_hidden.py")).unwrap(), "hidden");
        assert!(!std::fs::symlink_metadata(tree.path().join("tests")).unwrap().file_type().is_symlink());
    }
}
