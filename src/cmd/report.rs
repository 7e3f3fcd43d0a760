//! `evalua report`: re-render report.md, report.html and junit.xml from a run
//! dir. An incomplete run (interrupted, or killed before it wrote its
//! summary) says so first, and its gates fail unless `--allow-incomplete`.

use crate::record::files;
use std::path::Path;

use crate::error::Result;
use crate::report;
use crate::stats::rundata;

pub fn report(dir: &Path, allow_incomplete: bool) -> Result<u8> {
    let data = rundata::load_with(dir, allow_incomplete)?;
    report::write_all(&data)?;
    if !data.summary_present {
        // A run killed before its end: give it the summary it never wrote.
        crate::record::rundir::write_json(&dir.join(files::SUMMARY), &data.summary_file())?;
    }
    if let Some(line) = report::text::incomplete_line(&data) {
        println!("{line}");
    }
    for g in data.gates.iter().filter(|g| !g.passed).chain(data.gates.iter().filter(|g| g.passed)) {
        println!("{}", report::gate_line(g));
    }
    for w in &data.warnings {
        println!("warning: {w}");
    }
    println!("wrote {}/{}", dir.display(), files::REPORTS.join(", "));
    Ok(if data.gates_passed() { 0 } else { 1 })
}
