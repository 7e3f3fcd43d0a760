//! `--resume RUN_DIR` and `--retry-errors RUN_DIR` (SPEC §11): trials.jsonl
//! is the truth. The finished trials it holds are kept; the rest of the plan
//! runs with the same seeds. A run dir whose manifest does not match the
//! suite, its fixtures, its agent or the flags is refused (exit 2): mixing
//! two different runs' trials would make figures that describe neither.
//!
//! Kept are the records of planned trials that did not end `interrupted`
//! (with `--retry-errors`, also not `infra_error`). trials.jsonl is first
//! rewritten (atomically) to hold just those, in plan order; the new trials
//! are appended as they finish; once every planned trial is recorded the file
//! is put in plan order again, so a resumed run's trials.jsonl equals an
//! uninterrupted run's apart from timings.

use crate::record::files;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use super::planned::{Kept, work};
use super::scheduler::RunOptions;
use crate::error::{Error, Result};
use crate::record::manifest::{AgentEntry, FileHash, Program, Resume};
use crate::record::{Ended, Manifest, Outcome, RunDir, Trace, TrialRecord};
use crate::sandbox::trial_seed;
use crate::trial::{self, Plan};

/// Which trials of the old run are run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Those without a record, and the interrupted ones.
    Resume,
    /// Those, and every `infra_error` one.
    RetryErrors,
}

impl Mode {
    pub fn flag(self) -> &'static str {
        match self {
            Mode::Resume => "--resume",
            Mode::RetryErrors => "--retry-errors",
        }
    }
}

/// A record read back from trials.jsonl, with its line as written.
pub struct Line {
    pub line: String,
    pub record: TrialRecord,
}

/// Read trials.jsonl for a resume. A last line cut short (evalua killed while
/// writing it, so it has no newline) is dropped; any other unreadable line is
/// an error with `file:line`.
pub fn read_lines(dir: &RunDir) -> Result<(Vec<Line>, bool)> {
    let path = dir.file(files::TRIALS);
    let mut text = String::new();
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            f.read_to_string(&mut text).map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(Error::Input(format!("{}: {e}", path.display()))),
    }
    let torn = !text.is_empty() && !text.ends_with('\n');
    let complete = if torn { &text[..text.rfind('\n').map(|i| i + 1).unwrap_or(0)] } else { &text[..] };
    let mut out = Vec::new();
    for (n, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: TrialRecord = serde_json::from_str(line)
            .map_err(|e| Error::Input(format!("{}:{}: not a trial record: {e}", path.display(), n + 1)))?;
        out.push(Line { line: line.to_string(), record });
    }
    Ok((out, torn))
}

/// Why `old` (the run dir's manifest) and `new` (built from the suite and
/// flags now) do not describe the same run, if they do not.
pub fn mismatch(old: &Manifest, new: &Manifest) -> Option<String> {
    let differ = |what: &str, a: String, b: String| (a != b).then(|| format!("{what}: {a} then, {b} now"));
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
    let filters = |f: &crate::record::manifest::Filters| {
        let mut v = Vec::new();
        if let Some(c) = &f.case {
            v.push(format!("--case {c}"));
        }
        v.extend(f.tags.iter().map(|t| format!("--tag {t}")));
        if let Some(s) = &f.split {
            v.push(format!("--split {s}"));
        }
        if v.is_empty() { "none".to_string() } else { v.join(" ") }
    };
    let short = |s: &str| s.get(..12).unwrap_or(s).to_string();
    let json = |v: &serde_json::Value| v.to_string();
    if let Some(d) = differ("the suite's name", old.suite.name.clone(), new.suite.name.clone())
        .or_else(|| differ("the suite's version", opt(old.suite.version.clone()), opt(new.suite.version.clone())))
        .or_else(|| differ("the suite file (sha256)", short(&old.suite.sha256), short(&new.suite.sha256)))
        .or_else(|| {
            differ(
                "the sandbox schema",
                opt(old.suite.schema.as_ref().and_then(|s| s.sha256.as_deref()).map(short)),
                opt(new.suite.schema.as_ref().and_then(|s| s.sha256.as_deref()).map(short)),
            )
        })
        .or_else(|| differ("the graders and modules (sha256)", short(&old.grader_sha256), short(&new.grader_sha256)))
        .or_else(|| differ("the tools (sha256)", short(&old.tool_contract_sha256), short(&new.tool_contract_sha256)))
        .or_else(|| {
            // A run dir from before agents had names records none: compare the rest.
            let mut new_agent = new.agent.clone();
            if old.agent.as_ref().is_none_or(|a| a.name.is_none())
                && let Some(a) = new_agent.as_mut()
            {
                a.name = None;
            }
            agent_difference("the agent", old.agent.as_ref(), new_agent.as_ref())
        })
        .or_else(|| differ("the budget", json(&serde_json::json!(old.budget)), json(&serde_json::json!(new.budget))))
        .or_else(|| differ("--seed", old.seed.to_string(), new.seed.to_string()))
        .or_else(|| differ("--trials", opt(old.trials.map(|t| t.to_string())), opt(new.trials.map(|t| t.to_string()))))
        .or_else(|| differ("--partition", opt(old.partition.clone()), opt(new.partition.clone())))
        .or_else(|| differ("the case filters", filters(&old.filters), filters(&new.filters)))
        .or_else(|| {
            let names = |m: &Manifest| {
                m.gates.iter().map(|g| format!("{}={}", g.name, g.threshold)).collect::<Vec<_>>().join(", ")
            };
            differ("the gates", names(old), names(new))
        })
    {
        return Some(d);
    }
    let ids = |m: &Manifest| m.cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>().join(", ");
    if let Some(d) = differ("the cases", ids(old), ids(new)) {
        return Some(d);
    }
    for (a, b) in old.cases.iter().zip(&new.cases) {
        if a.trials != b.trials {
            return Some(format!("case '{}': {} trials then, {} now", a.id, a.trials, b.trials));
        }
        if a.revision != b.revision {
            let what = if a.fixture_sha256 != b.fixture_sha256 {
                "its fixture"
            } else {
                "its declaration, clock or work tree"
            };
            return Some(format!("case '{}': {what} changed", a.id));
        }
        if let Some(d) = agent_difference("its agent", a.agent.as_ref(), b.agent.as_ref()) {
            return Some(format!("case '{}': {d}", a.id));
        }
    }
    None
}

/// A value in a short line: at most 60 characters.
fn brief(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => format!("{s:?}"),
        serde_json::Value::Null => "none".to_string(),
        v => v.to_string(),
    };
    crate::util::names::truncate(&s, 60)
}

/// The first place two JSON values differ: (path, then, now).
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<(String, String, String)> {
    use serde_json::Value as J;
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (a, b) {
        _ if a == b => None,
        (J::Object(x), J::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .find_map(|k| first_difference(x.get(k).unwrap_or(&J::Null), y.get(k).unwrap_or(&J::Null), &join(k)))
        }
        (J::Array(x), J::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}[{i}]")))
        }
        _ => Some((path.to_string(), brief(a), brief(b))),
    }
}

/// A program's file as recorded: (path, sha256).
fn recorded(f: Option<&FileHash>) -> (String, Option<String>) {
    f.map(|f| (f.path.clone(), f.sha256.clone())).unwrap_or_default()
}

/// What a program recorded then runs now: a shim recorded by an older
/// evalua is followed to its interpreter and hashed now. (The recorded path
/// has a `/`: it is not looked up on PATH, so the isolation changes nothing.)
fn runs_now(path: &str, sha: Option<String>) -> (String, Option<String>) {
    match crate::run::manifest::resolve_program(path, crate::process::Isolation::Sandbox, &[]) {
        Some((real, Some(_))) => {
            let sha = std::fs::read(&real).ok().map(|b| crate::util::digest::sha256_hex(&b));
            (real.display().to_string(), sha)
        }
        _ => (path.to_string(), sha),
    }
}

/// How two manifests' agent entries differ, in one short line naming the
/// one field that changed; None when they run the same thing. Programs are
/// compared by what they run (the real file's hash; its path when it has
/// none), not by how the command spells or finds them: a pyenv shim and the
/// interpreter it starts are the same program.
pub fn agent_difference(what: &str, old: Option<&AgentEntry>, new: Option<&AgentEntry>) -> Option<String> {
    let short = |s: &Option<String>| s.as_deref().map(|s| s.get(..12).unwrap_or(s).to_string()).unwrap_or("?".into());
    // The agent as declared, with its name: what the run asked for.
    let declared = |a: Option<&AgentEntry>| match a {
        None => serde_json::Value::Null,
        Some(a) => {
            let mut m = a.declared.clone();
            if let Some(n) = &a.name {
                m.insert("name".into(), serde_json::Value::String(n.clone()));
            }
            serde_json::Value::Object(m)
        }
    };
    if let Some((path, then, now)) = first_difference(&declared(old), &declared(new), "") {
        let field = if path.is_empty() { String::new() } else { format!(" {path}") };
        return Some(format!("{what}{field}: {then} then, {now} now"));
    }
    let (po, pn) = (old.and_then(|a| a.program.as_ref()), new.and_then(|a| a.program.as_ref()));
    let (eo, en) = (po.and_then(|p| p.executable.as_ref()), pn.and_then(|p| p.executable.as_ref()));
    if eo.is_some() || en.is_some() {
        let (op, osha) = recorded(eo);
        let (op, osha) = runs_now(&op, osha);
        let (np, nsha) = recorded(en);
        let same = match (&osha, &nsha) {
            (Some(a), Some(b)) => a == b,
            _ => op == np,
        };
        if !same {
            return Some(format!(
                "{what}'s program: {op} (sha256 {}) then, {np} (sha256 {}) now",
                short(&osha),
                short(&nsha)
            ));
        }
    }
    let list = |p: Option<&Program>| -> Vec<(String, Option<String>)> {
        p.map(|p| p.files.iter().map(|f| recorded(Some(f))).collect()).unwrap_or_default()
    };
    let (a, b) = (list(po), list(pn));
    for (path, sha) in &a {
        match b.iter().find(|(p, _)| p == path) {
            Some((_, now)) if now != sha => {
                return Some(format!("{what}'s file {path} changed (sha256 {} then, {} now)", short(sha), short(now)));
            }
            None => return Some(format!("{what}'s file {path} is not named now")),
            _ => {}
        }
    }
    if let Some((path, _)) = b.iter().find(|(p, _)| !a.iter().any(|(q, _)| q == p)) {
        return Some(format!("{what}'s file {path} is new"));
    }
    let file = |a: Option<&AgentEntry>| recorded(a.and_then(|a| a.file.as_ref()));
    let (fo, fnew) = (file(old), file(new));
    if fo != fnew {
        return Some(format!("{what}'s script {}: sha256 {} then, {} now", fnew.0, short(&fo.1), short(&fnew.1)));
    }
    None
}

/// A case with no clock of its own (nor the suite's) is frozen at the time
/// its run started: a resumed run keeps that clock, as its trials saw it.
pub fn adopt_clocks(plan: &mut Plan, old: &Manifest) {
    for case in &mut plan.cases {
        if case.spec.clock.is_some() || plan.suite.clock.is_some() {
            continue;
        }
        let Some(entry) = old.cases.iter().find(|c| c.id == case.spec.id) else { continue };
        if let Ok(secs) = crate::util::time::instant(&entry.clock, "UTC") {
            case.clock = secs as i64;
            case.clock_text = entry.clock.clone();
        }
    }
}

/// What a resume starts from: the trials kept (by index in the plan's work)
/// and the history entry for the manifest.
pub struct Prepared {
    pub kept: BTreeMap<usize, Kept>,
    pub entry: Resume,
}

/// Check the run dir against the plan and flags, keep its finished trials,
/// and rewrite trials.jsonl to hold just them (in plan order).
pub fn prepare(
    dir: &RunDir,
    plan: &Plan,
    opts: &RunOptions,
    new: &Manifest,
    mode: Mode,
    argv: &[String],
) -> Result<(Manifest, Prepared)> {
    let shown = dir.path.display();
    let old = dir.read_manifest()?;
    if old.merged_from.is_some() {
        return Err(Error::Input(format!(
            "{shown}: a merged run cannot be resumed; resume its parts, then merge them"
        )));
    }
    if let Some(why) = mismatch(&old, new) {
        return Err(Error::Input(format!(
            "{} {shown}: the run dir is not a run of this suite with these flags ({why}); start a new run instead",
            mode.flag()
        )));
    }
    let (lines, torn) = read_lines(dir)?;
    if torn {
        eprintln!(
            "warning: {shown}/{}: its last line was cut short (evalua was killed while writing it); that trial runs again",
            files::TRIALS
        );
    }
    let work = work(plan, opts.partition);
    let index: HashMap<(&str, u32), usize> =
        work.iter().enumerate().map(|(i, &(c, t))| ((plan.cases[c].spec.id.as_str(), t), i)).collect();
    let mut keep: BTreeMap<usize, Line> = BTreeMap::new();
    let path = dir.file(files::TRIALS);
    for l in lines {
        let r = &l.record;
        let Some(&i) = index.get(&(r.case.as_str(), r.trial)) else {
            return Err(Error::Input(format!(
                "{}: a record of {}#{}, which this run does not plan; start a new run instead",
                path.display(),
                r.case,
                r.trial
            )));
        };
        if r.seed != trial_seed(plan.seed, &r.case, r.trial) {
            return Err(Error::Input(format!(
                "{}: the record of {}#{} was made with another seed; start a new run instead",
                path.display(),
                r.case,
                r.trial
            )));
        }
        let again = r.ended == Ended::Interrupted || (mode == Mode::RetryErrors && r.outcome == Outcome::InfraError);
        if again {
            keep.remove(&i);
        } else {
            // A later record of the same trial supersedes an earlier one.
            keep.insert(i, l);
        }
    }
    let kept_lines: Vec<&str> = keep.values().map(|l| l.line.as_str()).collect();
    dir.rewrite_trials(&kept_lines)?;
    // The old summary and reports describe the old records: remove them
    // until this run writes its own.
    for f in std::iter::once(files::SUMMARY).chain(files::REPORTS) {
        let _ = std::fs::remove_file(dir.file(f));
    }
    let entry = Resume {
        at: jiff::Timestamp::now().to_string(),
        command: argv.to_vec(),
        mode: match mode {
            Mode::Resume => "resume",
            Mode::RetryErrors => "retry_errors",
        }
        .to_string(),
        kept: keep.len(),
        run: work.len() - keep.len(),
    };
    let kept = keep
        .into_iter()
        .map(|(i, l)| {
            let case = &plan.cases[work[i].0];
            // (The input is in the trace; the plan keeps none.)
            let tests = trial::test_rows_of(&case.spec, &l.record.checks);
            // The record as trials.jsonl has it; the rest from its trace, when it can be read.
            let trace = dir.read_trace(&l.record).unwrap_or_else(|| Trace::of(l.record));
            (i, Kept { trace, tests })
        })
        .collect();
    Ok((old, Prepared { kept, entry }))
}

/// Once every planned trial is recorded: put trials.jsonl in plan order (a
/// resume appended its trials after the kept ones).
pub fn normalize_order(dir: &RunDir, plan: &Plan, opts: &RunOptions) -> Result<()> {
    put_in_order(dir, plan, &work(plan, opts.partition))
}

/// Put trials.jsonl in the order of `work` ((case index, trial) pairs; an
/// adaptive run's: the order its rounds ran them in).
pub fn put_in_order(dir: &RunDir, plan: &Plan, work: &[(usize, u32)]) -> Result<()> {
    let (lines, _) = read_lines(dir)?;
    let index: HashMap<(&str, u32), usize> =
        work.iter().enumerate().map(|(i, &(c, t))| ((plan.cases[c].spec.id.as_str(), t), i)).collect();
    let mut ordered: Vec<(usize, &str)> = lines
        .iter()
        .map(|l| (index.get(&(l.record.case.as_str(), l.record.trial)).copied().unwrap_or(usize::MAX), l.line.as_str()))
        .collect();
    if ordered.windows(2).all(|w| w[0].0 <= w[1].0) {
        return Ok(());
    }
    ordered.sort_by_key(|(i, _)| *i);
    dir.rewrite_trials(&ordered.iter().map(|(_, l)| *l).collect::<Vec<_>>())
}
