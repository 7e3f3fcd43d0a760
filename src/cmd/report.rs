//! `evalua report`: re-render report.md, report.html and junit.xml from a run dir.

use std::path::Path;

use crate::error::Result;
use crate::report;
use crate::stats::rundata;

pub fn report(dir: &Path) -> Result<u8> {
    let data = rundata::load(dir)?;
    report::write_all(&data)?;
    for g in &data.gates {
        println!("{}", report::gate_line(g));
    }
    println!("wrote {}/report.md, report.html, junit.xml", dir.display());
    Ok(if data.gates_passed() { 0 } else { 1 })
}
