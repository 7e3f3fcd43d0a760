//! Steps 4 and 5 of a draft's validation (see `validate.rs`): the drafts
//! declared through a wrapper suite beside the suite file — the suite itself,
//! `require`d, plus `suite:cases { draft }` a line each — loaded as `evalua
//! check` loads a suite (a draft whose line has an error does not load), then
//! run by `evalua run` (one trial each, seeded) with an agent that makes the
//! draft's `reference_calls` through the executor, on the draft's fixture.
//! The draft's own checks decide: accepted is valid; a failed check or a
//! prohibited state reached (a critical failure) is invalid, with the checks'
//! evidence. The wrapper, its fixtures and the run live only while validating.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value as Json;

use super::checked::{Checked, Context, Fate};
use crate::error::{Error, Result};
use crate::lua::load;
use crate::record::{CallStatus, Outcome, RunDir, TrialRecord};
use crate::util::lua_literal;
use crate::util::paths::display_path;

/// The tag the validation run selects its cases by.
const TAG: &str = "evalua_synth_validation";

/// The wrapper suite, removed when dropped.
struct Wrapper {
    path: PathBuf,
    /// The line of each draft's `suite:cases` (index into the drafts).
    lines: Vec<(usize, usize)>,
    _fixtures: tempfile::TempDir,
}

impl Drop for Wrapper {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Write the wrapper for the valid drafts; `replay`: give each the agent replaying its reference.
fn wrapper(ctx: &Context, all: &[Checked], replay: bool) -> Result<Wrapper> {
    let stem = ctx.suite_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if stem.is_empty() || stem.contains('.') {
        return Err(Error::Input(format!(
            "{}: evalua synth requires the suite file's name to be a Lua module name (no '.' before .lua)",
            display_path(ctx.suite_path)
        )));
    }
    let fixtures = tempfile::tempdir().map_err(|e| Error::Environment(format!("a temporary folder: {e}")))?;
    let mut o = String::new();
    o.push_str("-- Written by `evalua synth` to validate drafted cases; removed when it is done.\n");
    let _ = writeln!(o, "local suite = require({})", lua_literal::string(&stem));
    o.push_str("local evalua = require(\"evalua\")\nlocal D = {}\n");
    o.push_str("local function replay(calls)\n  return evalua.agent.scripted(function(task, env)\n");
    o.push_str("    for _, c in ipairs(calls) do env.call(c.name, c.args or {}) end\n");
    o.push_str("    return \"reference path replayed\"\n  end)\nend\n");
    let mut lines = Vec::new();
    for (i, c) in all.iter().enumerate().filter(|(_, c)| c.valid()) {
        let mut case = c.case.clone();
        if let Some(obj) = case.as_object_mut() {
            obj.remove("review");
            obj.remove("source");
        }
        if let Some(sql) = &c.fixture_sql {
            let f = fixtures.path().join(format!("{}.sql", c.index));
            std::fs::write(&f, sql).map_err(|e| Error::Environment(format!("{}: {e}", f.display())))?;
            case["fixture"] = Json::String(f.display().to_string());
        }
        let _ = write!(o, "D[{}] = ", i + 1);
        lua_literal::value(&case, 0, &[], &mut o);
        o.push('\n');
        if replay {
            let _ =
                writeln!(o, "D[{n}].agent = replay(D[{n}].reference and D[{n}].reference.calls or {{}})", n = i + 1);
            let _ = writeln!(o, "D[{}].tags = {{ \"{TAG}\" }}", i + 1);
        }
        lines.push((o.lines().count() + 1, i));
        let _ = writeln!(o, "suite:cases({{ D[{}] }})", i + 1);
    }
    o.push_str("return suite\n");
    let path = ctx.suite.dir.join(format!(".evalua-synth-{}.lua", std::process::id()));
    std::fs::write(&path, o).map_err(|e| Error::Environment(format!("{}: {e}", display_path(&path))))?;
    Ok(Wrapper { path, lines, _fixtures: fixtures })
}

/// Step 4: each draft loads as a case.
pub fn loads(ctx: &Context, all: &mut [Checked]) -> Result<()> {
    if !all.iter().any(Checked::valid) {
        return Ok(());
    }
    let w = wrapper(ctx, all, false)?;
    let name = w.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let errors = match load::load_checked(&w.path) {
        Ok((_, errors)) => errors,
        Err(Error::Input(m)) => m.lines().map(String::from).collect(),
        Err(e) => return Err(e),
    };
    let mut unplaced = Vec::new();
    for e in errors {
        let at = e.split(':').next().is_some_and(|f| f.ends_with(&name));
        let line = e.split(':').nth(1).and_then(|l| l.trim().parse::<usize>().ok());
        match w.lines.iter().find(|(l, _)| at && Some(*l) == line) {
            Some((_, i)) => {
                let msg = e.splitn(3, ':').nth(2).unwrap_or(&e).trim().to_string();
                all[*i].reject(Fate::Invalid(format!("it does not load as a case: {msg}")));
            }
            None => unplaced.push(e),
        }
    }
    if !unplaced.is_empty() {
        // Not a draft's: the suite itself, or the wrapper (then every draft is suspect).
        return Err(Error::Input(unplaced.join("\n")));
    }
    Ok(())
}

/// Step 5: the reference path, replayed by a one-trial run of each draft.
pub fn replay(ctx: &Context, all: &mut [Checked]) -> Result<()> {
    if !all.iter().any(Checked::valid) {
        return Ok(());
    }
    let w = wrapper(ctx, all, true)?;
    let out = tempfile::tempdir().map_err(|e| Error::Environment(format!("a temporary folder: {e}")))?;
    let run_dir = out.path().join("run");
    let exe =
        std::env::current_exe().map_err(|e| Error::Environment(format!("cannot find evalua's own binary: {e}")))?;
    let result = std::process::Command::new(exe)
        .arg("run")
        .arg(&w.path)
        .args(["--tag", TAG, "--trials", "1", "--seed", "1", "-q", "--out"])
        .arg(&run_dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::Environment(format!("cannot start evalua run: {e}")))?;
    let code = result.status.code().unwrap_or(3);
    if code >= 2 || !run_dir.join(crate::record::files::TRIALS).is_file() {
        let err = String::from_utf8_lossy(&result.stderr);
        let last =
            err.lines().filter(|l| l.starts_with("error:")).next_back().unwrap_or("no record written").to_string();
        for c in all.iter_mut() {
            c.reject(Fate::Invalid(format!("its reference path could not be replayed: {last}")));
        }
        return Ok(());
    }
    let records = RunDir::open(&run_dir)?.records()?;
    let mut seen = Vec::new();
    for r in records {
        let (_, _, rec) = r?;
        if let Some(c) = all.iter_mut().find(|c| c.valid() && c.id == rec.case) {
            seen.push(c.index);
            if let Some(why) = verdict(&rec) {
                c.reject(Fate::Invalid(why));
            }
        }
    }
    for c in all.iter_mut().filter(|c| c.valid() && !seen.contains(&c.index)) {
        c.reject(Fate::Invalid("its replay left no record".into()));
    }
    Ok(())
}

fn short(v: &Json) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 { format!("{}…", s.chars().take(200).collect::<String>()) } else { s }
}

/// Why the replayed trial does not validate the draft, if it does not.
fn verdict(rec: &TrialRecord) -> Option<String> {
    let failed: Vec<String> = rec
        .checks
        .iter()
        .filter(|c| c.monitor.is_none() && c.passed != Some(true))
        .map(|c| match &c.error {
            Some(e) => format!("{} raised: {e}", c.name),
            None => format!("{} ({})", c.name, short(&c.evidence)),
        })
        .collect();
    let calls: Vec<String> = rec
        .tool_spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.status != CallStatus::Executed)
        .map(|(i, s)| format!("call {} ({}) {}", i + 1, s.tool, s.status.as_str()))
        .collect();
    let calls = if calls.is_empty() { String::new() } else { format!("; {}", calls.join(", ")) };
    match rec.outcome {
        Outcome::Accepted => None,
        Outcome::Critical => {
            Some(format!("its reference path reaches a prohibited state: {}{calls}", failed.join("; ")))
        }
        Outcome::Failed => Some(format!("its reference path fails its own check: {}{calls}", failed.join("; "))),
        other => Some(format!(
            "its replay ended {}: {}{calls}",
            other.as_str(),
            rec.infra_error.clone().or_else(|| rec.error.clone()).unwrap_or_else(|| failed.join("; "))
        )),
    }
}
