//! The manifest of a run, built from its plan and options before the first
//! trial (see `record::manifest` for what each key means).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::scheduler::RunOptions;
use crate::lua::engine::STDLIB;
use crate::process::Isolation;
use crate::record::manifest::{
    AgentEntry, CaseEntry, DatasetEntry, FileHash, GateEntry, IsolationEntry, Machine, Manifest, Program, RunKind,
    StateKeeping, SuiteEntry, WorkdirEntry,
};
use crate::spec::{AgentSpec, DEFAULT_DEADLINE_S};
use crate::trial::Plan;
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

fn file_hash(p: &Path) -> FileHash {
    match fs::read(p) {
        Ok(b) => FileHash { path: display_path(p), sha256: Some(sha256_hex(&b)), error: None },
        Err(e) => FileHash { path: display_path(p), sha256: None, error: Some(e.to_string()) },
    }
}

/// What identifies the suite in any manifest (a run's or a grade's): its
/// entry (without a sandbox's schema and database), its source files and its
/// tool contract's hash.
pub fn suite_identity(suite: &crate::spec::Suite) -> (SuiteEntry, Vec<FileHash>, String) {
    let entry = SuiteEntry {
        name: suite.name.clone(),
        version: suite.version.clone(),
        path: display_path(&suite.path),
        sha256: fs::read(&suite.path).map(|b| sha256_hex(&b)).unwrap_or_default(),
        schema: None,
        db: None,
    };
    let sources = suite
        .sources
        .all()
        .iter()
        .map(|s| FileHash { path: s.display.clone(), sha256: Some(s.sha256.clone()), error: None })
        .collect();
    let tools = sha256_hex(serde_json::to_string(&suite.tools).unwrap_or_default().as_bytes());
    (entry, sources, tools)
}

/// sha256 over every source file of the suite and the embedded stdlib: what graded the run.
pub fn grader_hash_of(suite: &crate::spec::Suite) -> String {
    sha256_hex(
        suite
            .sources
            .all()
            .iter()
            .map(|s| format!("{}:{}", s.display, s.sha256))
            .chain(STDLIB.iter().map(|(n, _, src)| format!("{n}:{}", sha256_hex(src.as_bytes()))))
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes(),
    )
}

/// The manifest's entries for the suite's dataset files.
pub fn datasets(plan: &Plan) -> Vec<DatasetEntry> {
    plan.suite
        .datasets
        .iter()
        .map(|d| DatasetEntry {
            path: d.path.clone(),
            format: d.format.as_str().to_string(),
            sha256: d.sha256.clone(),
            bytes: d.bytes,
            rows: d.rows,
            cases: d.cases,
            skipped: d.skipped,
            skipped_rows: d.skipped_rows.clone(),
        })
        .collect()
}

fn is_exec(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Resolve a command's first word as the OS would: a path if it has a `/`,
/// else the first executable file of that name on PATH; symlinks followed.
pub fn resolve_executable(cmd: &str) -> Option<PathBuf> {
    resolve_in(cmd, &|_| true)
}

fn resolve_in(cmd: &str, visible: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    if cmd.contains('/') {
        let p = PathBuf::from(cmd);
        return is_exec(&p).then(|| fs::canonicalize(&p).unwrap_or(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| visible(d))
        .map(|d| d.join(cmd))
        .find(|p| is_exec(p))
        .map(|p| fs::canonicalize(&p).unwrap_or(p))
}

/// The program a command agent's first word runs, as its trials will run it:
/// looked up on PATH among the folders a sandboxed process sees (all of PATH
/// with `--isolation none`), symlinks followed, and a version manager's shim
/// (pyenv, rbenv, nodenv) followed to the interpreter it starts. Returns the
/// program and the shim, if one was followed.
pub fn resolve_program(cmd: &str, isolation: Isolation, expose: &[PathBuf]) -> Option<(PathBuf, Option<PathBuf>)> {
    let found = match isolation {
        Isolation::None => resolve_executable(cmd)?,
        Isolation::Sandbox => resolve_in(cmd, &|d| crate::process::sandbox_sees(d, expose))?,
    };
    match follow_shim(&found) {
        Some(real) => Some((real, Some(found))),
        None => Some((found, None)),
    }
}

/// The version managers whose shims are followed: (tool, its root variable,
/// its version variable). Their layout is the same: `<root>/shims/<name>`, a
/// script that runs `<tool> exec <name>`, and `<root>/versions/<v>/bin/<name>`,
/// `<v>` from the version variable, else the file `<root>/version`.
const SHIMS: [(&str, &str, &str); 3] = [
    ("pyenv", "PYENV_ROOT", "PYENV_VERSION"),
    ("rbenv", "RBENV_ROOT", "RBENV_VERSION"),
    ("nodenv", "NODENV_ROOT", "NODENV_VERSION"),
];

/// A shim followed to the program it starts, read from the version manager's
/// own files (nothing is run: a suite names its agent's program, and nothing
/// it names runs outside the sandbox). None when `p` is not such a shim, or
/// when where it leads cannot be told (a `system` version is looked up on
/// PATH without the shims).
fn follow_shim(p: &Path) -> Option<PathBuf> {
    let dir = p.parent()?;
    if dir.file_name()? != "shims" {
        return None;
    }
    let name = p.file_name()?.to_str()?;
    let mut head = vec![0u8; 4096];
    let n = std::io::Read::read(&mut fs::File::open(p).ok()?, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let (_, root_var, version_var) = SHIMS.iter().find(|(tool, _, _)| {
        text.starts_with("#!") && (text.contains(&format!("{tool}\" exec")) || text.contains(&format!("{tool} exec")))
    })?;
    let root =
        std::env::var_os(root_var).map(PathBuf::from).unwrap_or_else(|| dir.parent().unwrap_or(dir).to_path_buf());
    let versions = match std::env::var(version_var) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => fs::read_to_string(root.join("version")).unwrap_or_else(|_| "system".into()),
    };
    for v in versions.split([':', '\n']).map(str::trim).filter(|v| !v.is_empty() && !v.starts_with('#')) {
        let candidate = if v == "system" {
            let shims = fs::canonicalize(dir).unwrap_or(dir.to_path_buf());
            resolve_in(name, &|d| fs::canonicalize(d).unwrap_or(d.to_path_buf()) != shims)
        } else {
            let c = root.join("versions").join(v).join("bin").join(name);
            is_exec(&c).then(|| fs::canonicalize(&c).unwrap_or(c))
        };
        if candidate.is_some() {
            return candidate;
        }
    }
    None
}

pub fn program(cmd: &[String], suite_dir: &Path, isolation: Isolation, expose: &[PathBuf]) -> Program {
    let resolved = cmd.first().and_then(|c| resolve_program(c, isolation, expose));
    let via = resolved.as_ref().and_then(|(_, via)| via.as_ref()).map(|v| display_path(v));
    let executable = resolved.map(|(p, _)| file_hash(&p));
    let files = cmd
        .iter()
        .skip(1)
        .filter(|w| !w.starts_with('-') && !w.is_empty())
        .map(|w| if Path::new(w).is_absolute() { PathBuf::from(w) } else { suite_dir.join(w) })
        .filter(|p| p.is_file())
        .map(|p| file_hash(&p))
        .collect();
    Program { executable, via, files }
}

/// An agent as declared, with the hashes of what it runs (found as the plan's trials will find it).
fn agent_entry(a: &AgentSpec, plan: &Plan) -> AgentEntry {
    let suite = &plan.suite;
    let declared = match serde_json::to_value(a) {
        Ok(Json::Object(m)) => m,
        _ => Default::default(),
    };
    let mut e = AgentEntry::declared(declared);
    match a {
        AgentSpec::Scripted { path: Some(p) } => e.file = Some(file_hash(p)),
        AgentSpec::Command(c) => e.program = Some(program(&c.cmd, &suite.dir, plan.switches.isolation, &suite.expose)),
        _ => {}
    }
    e
}

/// The manifest of a run of `plan` (of its first condition's agent).
pub fn build(plan: &Plan, opts: &RunOptions, run_id: &str, argv: &[String]) -> Manifest {
    build_for(plan, 0, opts, run_id, argv)
}

/// The manifest of the part of a run of `plan` under its condition `c` (an interleaved run's agent's).
pub fn build_for(plan: &Plan, c: usize, opts: &RunOptions, run_id: &str, argv: &[String]) -> Manifest {
    let suite = &plan.suite;
    let mut fixture_hashes: HashMap<PathBuf, Option<String>> = HashMap::new();
    let cases = plan
        .cases
        .iter()
        .map(|c| {
            let fixture_sha = c.spec.fixture.as_ref().and_then(|p| {
                fixture_hashes.entry(p.clone()).or_insert_with(|| fs::read(p).ok().map(|b| sha256_hex(&b))).clone()
            });
            // The clock as declared (the case's, else the sandbox's): a suite that
            // freezes none runs at its start time, which is not the case's revision
            // (else no two runs of it could be compared).
            let declared_clock = c.spec.clock.as_ref().or(suite.clock.as_ref()).map(String::as_str).unwrap_or("");
            let revision = sha256_hex(
                format!(
                    "{}\n{:?}\n{}{}",
                    serde_json::to_string(&c.spec).unwrap_or_default(),
                    fixture_sha,
                    declared_clock,
                    c.work.as_ref().map(|w| format!("\n{}", w.hash)).unwrap_or_default()
                )
                .as_bytes(),
            );
            CaseEntry {
                id: c.spec.id.clone(),
                trials: c.trials,
                revision: Some(revision),
                fixture_sha256: fixture_sha,
                clock: c.clock_text.clone(),
                weight: c.spec.weight,
                tags: c.spec.tags.clone(),
                difficulty: c.spec.difficulty.clone(),
                agent: c.spec.agent.as_ref().map(|a| agent_entry(a, plan)),
                reference: c.spec.reference.clone(),
                should_abstain: c.spec.should_abstain,
                pending_review: c.spec.pending_review,
                workdir: c.work.as_ref().map(|w| WorkdirEntry {
                    source: serde_json::to_value(&w.spec).unwrap_or_default(),
                    tree_sha256: w.hash.clone(),
                    files: w.files,
                }),
            }
        })
        .collect();
    // The agent the run uses (`--agent`, else the default), with its name (SPEC §14).
    let agent = plan
        .agent_name(c)
        .and_then(|n| suite.agent_named(n).map(|a| (n, a)))
        .map(|(n, a)| AgentEntry { name: Some(n.to_string()), ..agent_entry(a, plan) });
    let base = base(suite, RunKind::Run, run_id, argv, opts.jobs, plan.switches.judge_cache);
    Manifest {
        suite: SuiteEntry {
            schema: suite.schema.as_deref().map(file_hash),
            db: plan.db.manifest_entry(),
            ..base.suite
        },
        datasets: datasets(plan),
        agent,
        cases,
        budget: suite.budget.clone(),
        default_deadline_s: DEFAULT_DEADLINE_S,
        trials: opts.trials,
        seed: plan.seed,
        partition: opts.partition.map(|p| p.to_string()),
        partition_from: opts.partition_from.clone(),
        filters: opts.filters.clone(),
        invalid_cases: plan.invalid.clone(),
        infra_error_policy:
            "capability figures leave infra_error trials out of n; figures.operational counts them as failures".into(),
        isolation: IsolationEntry {
            mode: match plan.switches.isolation {
                Isolation::Sandbox => "sandbox".into(),
                Isolation::None => "none".into(),
            },
            tool: match plan.switches.isolation {
                Isolation::Sandbox => crate::process::sandbox_ready().ok().map(|b| b.version.clone()),
                Isolation::None => None,
            },
            expose: suite.expose.iter().map(|p| p.display().to_string()).collect(),
            network: suite.network,
        },
        trial_state: Some(if plan.keep_state {
            StateKeeping::Kept
        } else if matches!(plan.db, crate::sandbox::db::Backend::Postgres(_)) {
            StateKeeping::Unsupported
        } else {
            StateKeeping::Skipped
        }),
        users: user_pins(plan),
        planned_trials: Some(super::planned::work(plan, opts.partition).len()),
        judge_checks: {
            // The suite's judge checks (the plan's cases keep no checks).
            let mut names: Vec<String> = suite.judges.iter().flat_map(|j| j.checks.iter().cloned()).collect();
            names.sort();
            names.dedup();
            names
        },
        ..base
    }
}

/// Every manifest's start, whatever made the run's trials: the suite (its
/// identity, grader hash, judges, gates, monitors), the command line and the
/// machine; what a plan adds (cases, agent, budget, seed, isolation) is empty.
pub fn base(
    suite: &crate::spec::Suite,
    kind: RunKind,
    run_id: &str,
    argv: &[String],
    jobs: usize,
    judge_cache: bool,
) -> Manifest {
    let (entry, sources, tool_contract_sha256) = suite_identity(suite);
    Manifest {
        evalua_version: env!("CARGO_PKG_VERSION").to_string(),
        format: crate::record::files::FORMAT,
        run_id: run_id.to_string(),
        kind,
        started_at: jiff::Timestamp::now().to_string(),
        command: argv.to_vec(),
        suite: entry,
        sources,
        datasets: Vec::new(),
        grader_sha256: grader_hash_of(suite),
        tool_contract_sha256,
        agent: None,
        judges: crate::judge::manifest(suite, judge_cache),
        cases: Vec::new(),
        budget: Default::default(),
        default_deadline_s: 0.0,
        trials: None,
        seed: 0,
        partition: None,
        partition_from: None,
        jobs,
        filters: Default::default(),
        // Grading decides the suite's grade-only gates when it has them.
        gates: match (kind, &suite.grade_gates) {
            (RunKind::Graded, Some(g)) => g,
            _ => &suite.gates,
        }
        .iter()
        .map(|g| GateEntry { name: g.name.clone(), threshold: g.threshold, on: g.on })
        .collect(),
        invalid_cases: Vec::new(),
        infra_error_policy: String::new(),
        machine: Machine::this(),
        isolation: Default::default(),
        merged_from: None,
        monitors: suite.monitors.iter().map(|m| m.name.clone()).collect(),
        trace_inputs: Vec::new(),
        warnings: Vec::new(),
        exports: Vec::new(),
        trial_state: None,
        regraded_from: None,
        planned_trials: None,
        judge_checks: Vec::new(),
        harden: None,
        interleaved: None,
        resumes: Vec::new(),
        publish: publish_entry(suite),
        users: Vec::new(),
        adaptive: None,
        extra: Default::default(),
    }
}

/// Each distinct simulated user of the plan's cases, with the cases it plays
/// (SPEC §18): model, endpoint host, temperature, seed, the sha256 of its system prompt.
fn user_pins(plan: &Plan) -> Vec<crate::record::manifest::UserPin> {
    let mut pins: Vec<crate::record::manifest::UserPin> = Vec::new();
    for c in &plan.cases {
        let Some(crate::spec::UserSpec::Llm(u)) = c.spec.user.as_deref() else { continue };
        let endpoint = crate::model::Endpoint::resolve(&u.model, false).ok();
        let host = endpoint.as_ref().and_then(|e| reqwest::Url::parse(&e.base_url).ok()).and_then(|url| {
            url.host_str().map(|h| match url.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            })
        });
        let prompt = crate::trial::user::system_prompt(u.system.as_deref(), &u.profile, &u.goal);
        let pin = crate::record::manifest::UserPin {
            cases: Vec::new(),
            provider: u.model.provider.as_str().to_string(),
            model: endpoint.map(|e| e.model).or_else(|| u.model.model.clone()),
            endpoint_host: host,
            temperature: u.model.temperature,
            seed: u.model.seed,
            system_sha256: crate::util::digest::sha256_hex(prompt.as_bytes()),
            profile: u.profile.clone(),
            goal: u.goal.clone(),
            adherence: None,
        };
        let adherence = u.adherence.as_ref().map(|j| j.name().to_string());
        // One pin per simulator and adherence judge: the viewer finds a case's judge by its pin.
        match pins.iter_mut().find(|p| p.simulator() == pin && p.adherence == adherence) {
            Some(p) => p.cases.push(c.spec.id.clone()),
            None => pins.push(crate::record::manifest::UserPin { cases: vec![c.spec.id.clone()], adherence, ..pin }),
        }
    }
    pins
}

/// What the suite declared about exclusions, contamination, interventions
/// and abstention (SPEC §22), when it declared any of it.
fn publish_entry(suite: &crate::spec::Suite) -> Option<crate::record::manifest::PublishEntry> {
    let p = &suite.publish;
    let entry = crate::record::manifest::PublishEntry {
        exclude: p.exclude.clone(),
        contamination: p.contamination.clone(),
        interventions: suite.tools.iter().filter(|t| t.intervention).map(|t| t.name.clone()).collect(),
        abstention: p.abstention,
    };
    (entry != Default::default()).then_some(entry)
}
