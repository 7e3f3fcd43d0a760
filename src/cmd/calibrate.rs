//! `evalua calibrate SUITE --labels F`: a judge against human labels.

use std::path::Path;

use crate::error::Result;
use crate::judge;
use crate::judge::calibrate::Options;
use crate::lua::load;

pub fn calibrate(suite: &Path, labels: &Path, opts: &Options) -> Result<u8> {
    let s = load::load(suite)?;
    let done = judge::calibrate::run(&s, labels, opts)?;
    for w in &done.warnings {
        super::json::warn(w.clone());
    }
    for n in &done.notes {
        println!("{n}");
    }
    for c in &done.rubrics {
        print!("{}", crate::report::calibration::text(c));
        super::json::push("rubrics", c.json());
    }
    super::json::set("notes", serde_json::json!(done.notes));
    if let Some((line, held)) = &done.gate {
        super::json::set("gate", serde_json::json!({ "line": line, "passed": held }));
        println!("{line}");
        if !held {
            return Ok(1);
        }
    }
    Ok(if done.rubrics.iter().all(|c| c.compared() > 0) { 0 } else { 1 })
}
