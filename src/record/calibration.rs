//! A judge's calibration record, `.evalua/calibration/<key>.json` beside the
//! suite (key: the judge model and prompt hash, `judge::records`): what
//! `evalua calibrate` measured against human labels, and what `--recheck`
//! measured on the held-out labels. Written by `judge::calibrate`, read back
//! by its recheck (the baseline) and by `run` (the manifest's calibration
//! kappa); one type for both sides.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::{Error, Result};

/// A judge's record: who it is, its calibration and its held-out recheck
/// (either may be missing: a recheck of a judge never calibrated makes a
/// record with its held-out part alone).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CalibrationRecord {
    pub rubric: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub judge: String,
    pub prompt_sha256: String,
    #[serde(default)]
    pub criteria: Option<Vec<String>>,
    #[serde(default)]
    pub suite: String,
    /// The measurement on the calibration part (absent in a held-out-only record).
    #[serde(flatten)]
    pub calibration: Option<Calibration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
}

/// The judge against the labels of the calibration part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub labels_file: String,
    pub labels_sha256: String,
    pub items: usize,
    pub labels: u64,
    #[serde(flatten)]
    pub agreement: Agreement,
    pub undeterminable: u64,
    pub judge_errors: u64,
    pub false_fail_rate: Rate,
    pub per_item: Vec<Json>,
    pub created_at: String,
    pub evalua_version: String,
}

/// The judge against the held-out labels (`calibrate --recheck`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeldOut {
    pub labels_file: String,
    pub labels_sha256: String,
    pub items: usize,
    #[serde(flatten)]
    pub agreement: Agreement,
    pub at: String,
}

/// What both measurements hold: the confusion matrix, kappa, the false-pass
/// rate, and every compared label.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Agreement {
    pub compared: u64,
    pub confusion: ConfusionForm,
    pub kappa: Option<f64>,
    /// Why kappa is undefined, when it is.
    pub kappa_note: Option<String>,
    pub false_pass_rate: Rate,
    pub pairs: Vec<Pair>,
    pub disagreements: Vec<Disagreement>,
}

/// Human × judge counts, as written: `{human_pass: {judge_pass, judge_fail}, human_fail: {…}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfusionForm {
    pub human_pass: ConfusionRow,
    pub human_fail: ConfusionRow,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfusionRow {
    pub judge_pass: u64,
    pub judge_fail: u64,
}

/// k of n, with its rate and 95% Wilson interval (null when n = 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub k: u64,
    pub n: u64,
    pub rate: Option<f64>,
    pub wilson95: Option<[f64; 2]>,
}

/// One human label compared with one judge verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// The item's id (or `line N` of the labels file).
    pub item: String,
    pub criterion: usize,
    pub human: bool,
    pub judge: bool,
}

/// A label the judge's verdict differs from, with the judge's reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    /// The item's id (or `line N` of the labels file).
    pub item: String,
    /// `file:line` of the item in the labels file.
    pub at: String,
    /// 1-based, as the judge sees it.
    pub criterion: usize,
    pub criterion_text: String,
    /// `pass` or `fail`.
    pub judge: String,
    pub human: String,
    /// The judge's quotes for this criterion and its failure mode: why it decided so.
    pub quotes: Vec<String>,
    pub failure_mode: Option<String>,
}

impl CalibrationRecord {
    /// The record at `path`, or None when there is none or it does not read as one.
    pub fn read(path: &Path) -> Option<CalibrationRecord> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Write the record (its folder made if needed), whole or not at all.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: {e}", dir.display())))?;
        }
        super::rundir::write_json_file(path, self)
    }

    /// Kappa of the held-out recheck when there is one, else of the calibration.
    pub fn kappa(&self) -> Option<f64> {
        match (&self.held_out, &self.calibration) {
            (Some(h), _) if h.agreement.kappa.is_some() => h.agreement.kappa,
            (_, Some(c)) => c.agreement.kappa,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_out_only_record_reads_without_a_calibration() {
        let v = serde_json::json!({
            "rubric": "r", "type": "rubric", "judge": "m", "prompt_sha256": "abc", "criteria": ["c"], "suite": "s.lua",
            "held_out": { "labels_file": "l", "labels_sha256": "x", "items": 1, "compared": 1,
              "confusion": { "human_pass": { "judge_pass": 1, "judge_fail": 0 }, "human_fail": { "judge_pass": 0, "judge_fail": 0 } },
              "kappa": null, "kappa_note": "undefined", "false_pass_rate": { "k": 0, "n": 0, "rate": null, "wilson95": null },
              "pairs": [], "disagreements": [], "at": "now" }
        });
        let r: CalibrationRecord = serde_json::from_value(v).unwrap();
        assert!(r.calibration.is_none());
        assert_eq!(r.held_out.as_ref().unwrap().agreement.compared, 1);
        // Written back, it has no calibration keys.
        let back = serde_json::to_value(&r).unwrap();
        assert!(back.get("labels_file").is_none() && back["held_out"]["at"] == "now", "{back}");
    }
}
