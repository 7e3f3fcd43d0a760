//! What people read: the console summary printed after a run (per case,
//! suite totals with their denominators, errors apart, and the gates), the
//! report files (report.md, report.html, junit.xml), `compare`, and the
//! sinks that follow a run as it goes (trials.jsonl, progress, tallies).

pub mod compare;
pub mod console;
pub mod html;
pub mod junit;
pub mod md;
pub mod sinks;
pub mod text;

pub use console::{console, console_for};
pub use text::gate_line;

use std::path::Path;

use crate::error::{Error, Result};
use crate::stats::RunData;

/// Write report.md, junit.xml and report.html into the run dir.
pub fn write_all(run: &RunData) -> Result<()> {
    let w = |name: &str, text: String| {
        let p: &Path = &run.dir.join(name);
        std::fs::write(p, text).map_err(|e| Error::Environment(format!("{}: cannot write: {e}", p.display())))
    };
    w("report.md", md::render(run))?;
    w("junit.xml", junit::render(run)?)?;
    w("report.html", html::render(run))?;
    Ok(())
}
