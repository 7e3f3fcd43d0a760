//! `evalua compare BASE CAND`: paired, case by case.

use std::path::Path;

use crate::error::Result;
use crate::report::compare::{console, markdown};
use crate::stats::compare::{Comparison, compare as compare_runs};
use crate::stats::rundata;

pub fn compare(base: &Path, cand: &Path, allow: bool, json: bool, md: bool) -> Result<u8> {
    let b = rundata::load(base)?;
    let c = rundata::load(cand)?;
    let cmp = compare_runs(&b, &c, allow)?;
    if json {
        // The comparison's keys go into the command's document (`--json`, evalua.compare/1);
        // the table goes to stderr.
        // (The comparison's warnings are the document's `warnings`.)
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&cmp) {
            for (k, v) in m.into_iter().filter(|(k, _)| k != "warnings") {
                super::json::set(&k, v);
            }
        }
        for w in &cmp.warnings {
            super::json::warn(w.clone());
        }
        print!("{}", console(&Comparison { warnings: Vec::new(), ..cmp }));
    } else if md {
        print!("{}", markdown(&cmp));
    } else {
        for w in &cmp.warnings {
            eprintln!("warning: {w}");
        }
        print!("{}", console(&Comparison { warnings: Vec::new(), ..cmp }));
    }
    Ok(0)
}
