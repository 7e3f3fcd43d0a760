//! A suite's judges as the run records them: the manifest's `judges`, the
//! calibration record of each (model, prompt), and the warnings `run`
//! prints when a judge has none.

use std::path::{Path, PathBuf};

use super::cache;
use super::prompt::prompt_hash;
use super::resolve::resolve;
use crate::record::calibration::CalibrationRecord;
use crate::record::manifest::{JudgeEntry, JudgeModelEntry, JudgeStage, JudgeStages};
use crate::spec::{JudgeSpec, Suite};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

/// Where calibration records of a suite in `suite_dir` live.
pub fn calibration_dir(suite_dir: &Path) -> PathBuf {
    suite_dir.join(".evalua").join("calibration")
}

/// The record file of (judge model, prompt hash).
pub fn calibration_path(suite_dir: &Path, model_id: &str, prompt_hash: &str) -> PathBuf {
    let key = sha256_hex(format!("{model_id}\n{prompt_hash}").as_bytes());
    calibration_dir(suite_dir).join(format!("{}.json", &key[..16]))
}

/// Whether a rubric's judge has a calibration record for its current prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Calibration {
    Current(PathBuf),
    /// A record exists for this rubric and model, but for another prompt.
    Stale {
        path: PathBuf,
        prompt_hash: String,
    },
    Missing,
}

impl Calibration {
    pub fn as_str(&self) -> &'static str {
        match self {
            Calibration::Current(_) => "current",
            Calibration::Stale { .. } => "prompt_changed",
            Calibration::Missing => "none",
        }
    }
}

pub fn calibration(suite_dir: &Path, spec: &JudgeSpec) -> Calibration {
    let (model_id, hash) = (spec.model_id(), prompt_hash(spec));
    let p = calibration_path(suite_dir, &model_id, &hash);
    if p.is_file() {
        return Calibration::Current(p);
    }
    let Ok(rd) = std::fs::read_dir(calibration_dir(suite_dir)) else {
        return Calibration::Missing;
    };
    for e in rd.flatten() {
        let Some(v) = CalibrationRecord::read(&e.path()) else { continue };
        if v.rubric == spec.name() && v.judge == model_id {
            return Calibration::Stale { path: e.path(), prompt_hash: v.prompt_sha256 };
        }
    }
    Calibration::Missing
}

/// The kappa of a judge's current calibration record: its held-out recheck's
/// when it has one, else its calibration's (None without a current record or a defined kappa).
pub fn calibration_kappa(suite_dir: &Path, spec: &JudgeSpec) -> Option<f64> {
    let Calibration::Current(p) = calibration(suite_dir, spec) else { return None };
    CalibrationRecord::read(&p)?.kappa()
}

/// Every distinct judge check of a suite: (spec, the cases that use it).
pub fn suite_judges(suite: &Suite) -> Vec<(JudgeSpec, Vec<String>)> {
    suite.judges.iter().map(|j| (j.spec.clone(), j.cases.clone())).collect()
}

/// The adherence judges of the suite's simulated users (SPEC §18), one per
/// name: judges of the users' conduct, apart from the cases' checks (and so
/// not in the manifest's `judges`), found by name for `evalua calibrate`.
pub fn adherence_judges(suite: &Suite) -> Vec<JudgeSpec> {
    let mut out: Vec<JudgeSpec> = Vec::new();
    for c in &suite.cases {
        let Some(crate::spec::UserSpec::Llm(u)) = c.user.as_deref() else { continue };
        if let Some(j) = u.adherence.as_deref()
            && !out.iter().any(|x| x.name() == j.name())
        {
            out.push(j.clone());
        }
    }
    out
}

/// The manifest's `judges`: each judge check's model(s) and prompt hash, and
/// the run's cache (`judge_cache`: false under `--no-cache`).
pub fn manifest(suite: &Suite, judge_cache: bool) -> Vec<JudgeEntry> {
    let stage =
        |s: &JudgeSpec| JudgeStage { judge: s.model_id(), name: s.name().to_string(), prompt_sha256: prompt_hash(s) };
    suite_judges(suite)
        .into_iter()
        .map(|(spec, cases)| {
            let reachable = !spec.models().is_empty() && spec.models().iter().all(|m| resolve(m).is_ok());
            JudgeEntry {
                name: spec.name().to_string(),
                kind: spec.kind().to_string(),
                judge: spec.model_id(),
                models: spec
                    .models()
                    .iter()
                    .map(|m| JudgeModelEntry {
                        provider: m.provider.as_str().to_string(),
                        model: m.model.clone(),
                        base_url: resolve(m).ok().map(|j| j.endpoint.base_url),
                        temperature: m.temperature,
                        seed: m.seed,
                    })
                    .collect(),
                criteria: spec.criteria().map(<[String]>::to_vec),
                prompt_sha256: prompt_hash(&spec),
                reachable,
                calibration: calibration(&suite.dir, &spec).as_str().to_string(),
                calibration_kappa: calibration_kappa(&suite.dir, &spec),
                cases,
                cache: cache::Cache::of(&suite.dir, judge_cache).describe(),
                stages: match &spec {
                    JudgeSpec::Cascade { first, then, escalate, .. } => {
                        Some(JudgeStages { escalate: escalate.clone(), first: stage(first), then: stage(then) })
                    }
                    _ => None,
                },
                extra: Default::default(),
            }
        })
        .collect()
}

/// Warnings for `evalua run`: reachable rubric judges without a calibration
/// record for their (model, prompt), or whose prompt changed since.
pub fn calibration_warnings(suite: &Suite) -> Vec<String> {
    let mut out = Vec::new();
    for (spec, _) in suite_judges(suite) {
        if !matches!(spec, JudgeSpec::Rubric { .. } | JudgeSpec::Cascade { .. })
            || spec.models().is_empty()
            || !spec.models().iter().all(|m| resolve(m).is_ok())
        {
            continue;
        }
        let suite_path = display_path(&suite.path);
        match calibration(&suite.dir, &spec) {
            Calibration::Current(_) => {}
            Calibration::Missing => out.push(format!(
                "judge '{}' ({}, prompt {}) has no calibration record: its agreement with humans is unknown \
                 (evalua calibrate {suite_path} --labels LABELS.jsonl)",
                spec.name(),
                spec.model_id(),
                &prompt_hash(&spec)[..12]
            )),
            Calibration::Stale { prompt_hash: then, .. } => out.push(format!(
                "judge '{}' ({}): its prompt changed since it was calibrated (prompt {} then, {} now); \
                 re-run evalua calibrate {suite_path} --labels LABELS.jsonl",
                spec.name(),
                spec.model_id(),
                then.get(..12).unwrap_or(&then),
                &prompt_hash(&spec)[..12]
            )),
        }
    }
    out
}
