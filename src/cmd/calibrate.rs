//! `evalua calibrate SUITE --labels F`: a judge against human labels.

use std::path::Path;

use crate::error::Result;
use crate::judge;
use crate::lua::load;

pub fn calibrate(suite: &Path, labels: &Path, rubric: Option<&str>) -> Result<u8> {
    let s = load::load(suite)?;
    let done = judge::calibrate::run(&s, labels, rubric)?;
    for c in &done {
        print!("{}", c.text);
        super::json::push("rubrics", c.json.clone());
    }
    Ok(if done.iter().all(|c| c.compared > 0) { 0 } else { 1 })
}
