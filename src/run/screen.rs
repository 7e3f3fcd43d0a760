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
    use crate::process::{Isolation, sandbox_ready};
    if plan.switches.isolation == Isolation::None {
        return Ok(());
    }
    // Every condition's agent: an interleaved run's command agent needs the sandbox too.
    let command = |i: usize| {
        (0..plan.conditions.len()).any(|condition| {
            let at = crate::trial::Position { case: i, number: 1, condition };
            matches!(plan.agent_for(at).spec, Some(crate::spec::AgentSpec::Command(_)))
        })
    };
    let needs = plan.cases.iter().enumerate().any(|(i, c)| command(i) || !c.spec.tests.is_empty());
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

/// A command agent's program and script, resolved as the sandbox will (the
/// program on PATH among the folders a sandboxed process sees, a relative path
/// in the trial's work dir, an absolute one as it is): each one that cannot
/// be found is an error naming the file, at the line of the declaration that
/// gave the agent (the suite's, or a case's own). `evalua check` says them;
/// a run would record every trial as crashed instead.
pub fn agent_programs(
    suite: &crate::spec::Suite,
    isolation: crate::process::Isolation,
    agent: Option<&str>,
) -> Vec<String> {
    use crate::spec::{AgentSpec, WorkdirSpec};
    let mut errors = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let empty = tempfile::tempdir().ok();
    // What a command agent's sandbox would see (`trial::agent_view`).
    let view = crate::process::View {
        isolation,
        read_only: suite.expose.clone(),
        writable: Vec::new(),
        no_network: !suite.network,
        expose_named: true,
        protect: crate::run::plan::protected_paths(suite, suite.cases.iter(), None),
        shield: vec![crate::process::real_path(&suite.dir)],
        tmp_bytes: Some(suite.keep.trial_bytes),
    };
    let path_var = std::env::var_os("PATH");
    for case in &suite.cases {
        // The case's own agent, else the one the run picks (`--agent`), else the suite's.
        let spec = match (case.agent.as_deref(), agent) {
            (Some(own), _) => Some(own),
            (None, Some(name)) => suite.agent_named(name),
            (None, None) => suite.agent.as_ref(),
        };
        let Some(AgentSpec::Command(c)) = spec else { continue };
        let at = if case.agent.is_some() { case.location.as_str() } else { suite.location.as_str() };
        // The trial's work dir starts as a copy of its template, or empty.
        let (cwd, from) = match suite.case_workdir(case) {
            Some(WorkdirSpec::Dir { path }) => (Some(path.clone()), format!("the copy of {}", display_path(path))),
            // A git work tree is only known once checked out: its files are not checked here.
            Some(WorkdirSpec::Git { .. }) => (None, String::new()),
            None => (empty.as_ref().map(|d| d.path().to_path_buf()), "an empty folder".to_string()),
        };
        if !seen.insert((at.to_string(), c.cmd.clone(), cwd.clone())) {
            continue;
        }
        if let Some(why) = command_missing(&c.cmd, cwd.as_deref(), &from, &suite.dir, path_var.as_ref(), &view) {
            errors.push(format!(
                "{at}: {}the agent's command {}: {why}",
                case_label(case, at, suite),
                cmd_text(&c.cmd)
            ));
        }
    }
    errors
}

fn case_label(case: &crate::spec::CaseSpec, at: &str, suite: &crate::spec::Suite) -> String {
    if at == suite.location { String::new() } else { format!("case '{}': ", case.id) }
}

fn cmd_text(cmd: &[String]) -> String {
    let words: Vec<String> = cmd.iter().map(|w| crate::util::paths::shell_word(w)).collect();
    format!("`{}`", words.join(" "))
}

/// Programs that run a script named by their first argument (the script is
/// the first word after the options).
fn runs_a_script(program: &str) -> bool {
    let name = std::path::Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or(program);
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        base,
        "python"
            | "pypy"
            | "node"
            | "nodejs"
            | "ruby"
            | "perl"
            | "bash"
            | "sh"
            | "dash"
            | "zsh"
            | "ksh"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "tsx"
            | "ts-node"
    )
}

/// The script a script-running program is given, if any (not `-m module`,
/// `-c code`, `-e code`, nor `-` for stdin).
fn script_of(cmd: &[String]) -> Option<&str> {
    let program = cmd.first()?;
    if !runs_a_script(program) {
        return None;
    }
    let mut words = cmd.iter().skip(1);
    while let Some(w) = words.next() {
        match w.as_str() {
            "-m" | "-c" | "-e" | "-p" | "--eval" | "--print" | "-" => return None,
            // Options that take the next word.
            "-W" | "-X" | "-r" | "--require" | "--import" | "--loader" | "-I" | "-O" => {
                words.next();
            }
            o if o.starts_with('-') => {}
            script => return Some(script),
        }
    }
    None
}

/// Why the sandbox would not find `cmd`'s program or script, if it would not.
fn command_missing(
    cmd: &[String],
    cwd: Option<&std::path::Path>,
    cwd_is: &str,
    suite_dir: &std::path::Path,
    path_var: Option<&std::ffi::OsString>,
    view: &crate::process::View,
) -> Option<String> {
    use crate::process::Isolation;
    use std::path::Path;
    let program = cmd.first()?;
    let hint = |rel: &str| {
        if suite_dir.join(rel).exists() {
            format!(" (it is beside the suite: give evalua.path({rel:?}))")
        } else {
            String::new()
        }
    };
    let relative_to_workdir = !Path::new(program).is_absolute() && program.contains('/');
    match (view.isolation, cwd) {
        (_, None) if relative_to_workdir => {}
        (Isolation::Sandbox, Some(cwd)) => {
            if let Some(why) = crate::process::sandbox_refuses(cmd, cwd, path_var, view) {
                let why = if relative_to_workdir {
                    format!("the program `{program}` is not in the trial's work dir ({cwd_is}){}", hint(program))
                } else {
                    why
                };
                return Some(why);
            }
        }
        (Isolation::Sandbox, None) => {
            let anywhere = std::env::temp_dir();
            if !relative_to_workdir && let Some(why) = crate::process::sandbox_refuses(cmd, &anywhere, path_var, view) {
                return Some(why);
            }
        }
        (Isolation::None, cwd) => {
            let found = if relative_to_workdir {
                cwd.is_none_or(|d| d.join(program).is_file())
            } else {
                crate::run::manifest::resolve_executable(program).is_some()
            };
            if !found {
                return Some(format!("the program `{program}` is not found{}", hint(program)));
            }
        }
    }
    let script = script_of(cmd)?;
    let p = Path::new(script);
    if p.is_absolute() {
        return (!p.is_file()).then(|| format!("the script {script} does not exist"));
    }
    let cwd = cwd?;
    (!cwd.join(p).is_file()).then(|| {
        format!(
            "the script {script} does not exist in the trial's work dir ({cwd_is}), where the agent starts{}",
            hint(script)
        )
    })
}
