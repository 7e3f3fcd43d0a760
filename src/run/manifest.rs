//! The manifest of a run, built from its plan and options before the first
//! trial (see `record::manifest` for what each key means).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::scheduler::RunOptions;
use crate::lua::engine::STDLIB;
use crate::record::manifest::{
    CaseEntry, FileHash, GateEntry, IsolationEntry, Machine, Manifest, SuiteEntry, WorkdirEntry,
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

/// sha256 over every source file of the suite and the embedded stdlib: what graded the run.
pub fn grader_hash(plan: &Plan) -> String {
    sha256_hex(
        plan.suite
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

pub fn build(plan: &Plan, opts: &RunOptions, run_id: &str, argv: &[String]) -> Manifest {
    let suite = &plan.suite;
    let mut fixture_hashes: HashMap<PathBuf, Option<String>> = HashMap::new();
    let cases = plan
        .cases
        .iter()
        .map(|c| {
            let fixture_sha = c.spec.fixture.as_ref().and_then(|p| {
                fixture_hashes.entry(p.clone()).or_insert_with(|| fs::read(p).ok().map(|b| sha256_hex(&b))).clone()
            });
            let revision = sha256_hex(
                format!(
                    "{}\n{:?}\n{}{}",
                    serde_json::to_string(&c.spec).unwrap_or_default(),
                    fixture_sha,
                    c.clock_text,
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
                workdir: c.work.as_ref().map(|w| WorkdirEntry {
                    source: serde_json::to_value(&w.spec).unwrap_or_default(),
                    tree_sha256: w.hash.clone(),
                    files: w.files,
                }),
            }
        })
        .collect();
    let agent = suite.agent.as_ref().map(|a| {
        let mut v = serde_json::to_value(a).unwrap_or_default();
        if let AgentSpec::Scripted { path: Some(p) } = a {
            v["file"] = serde_json::to_value(file_hash(p)).unwrap_or_default();
        }
        v
    });
    Manifest {
        evalua_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.to_string(),
        started_at: jiff::Timestamp::now().to_string(),
        command: argv.to_vec(),
        suite: SuiteEntry {
            name: suite.name.clone(),
            version: suite.version.clone(),
            path: display_path(&suite.path),
            sha256: fs::read(&suite.path).map(|b| sha256_hex(&b)).unwrap_or_default(),
            schema: suite.schema.as_deref().map(file_hash),
        },
        sources: suite
            .sources
            .all()
            .iter()
            .map(|s| FileHash { path: s.display.clone(), sha256: Some(s.sha256.clone()), error: None })
            .collect(),
        grader_sha256: grader_hash(plan),
        tool_contract_sha256: sha256_hex(serde_json::to_string(&suite.tools).unwrap_or_default().as_bytes()),
        agent: agent.unwrap_or(Json::Null),
        judges: crate::judge::manifest(suite),
        cases,
        budget: suite.budget.clone(),
        default_deadline_s: DEFAULT_DEADLINE_S,
        trials: opts.trials,
        seed: plan.seed,
        partition: opts.partition.map(|p| p.to_string()),
        jobs: opts.jobs,
        filters: opts.filters.clone(),
        gates: suite
            .gates
            .iter()
            .map(|g| GateEntry { name: g.name.clone(), threshold: g.threshold, on: g.on })
            .collect(),
        invalid_cases: plan.invalid.clone(),
        infra_error_policy:
            "capability figures leave infra_error trials out of n; figures.operational counts them as failures".into(),
        machine: Machine::this(),
        isolation: IsolationEntry {
            mode: match crate::process::isolation() {
                crate::process::Isolation::Sandbox => "sandbox".into(),
                crate::process::Isolation::None => "none".into(),
            },
            tool: match crate::process::isolation() {
                crate::process::Isolation::Sandbox => crate::process::sandbox_ready().ok().map(|b| b.version.clone()),
                crate::process::Isolation::None => None,
            },
            expose: suite.expose.iter().map(|p| p.display().to_string()).collect(),
            network: suite.network,
        },
        merged_from: None,
        extra: Default::default(),
    }
}
