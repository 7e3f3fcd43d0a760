//! What people read: the console summary printed after a run (per case,
//! suite totals with their denominators, errors apart, and the gates), the
//! report files (report.md, report.html, junit.xml), `compare`, and the
//! sinks that follow a run as it goes (trials.jsonl, progress, tallies).

pub mod calibration;
pub mod compare;
pub mod console;
pub mod github;
pub mod harden;
pub mod html;
pub mod interleaved;
pub mod junit;
pub mod md;
pub mod published;
pub mod robustness;
pub mod sinks;
pub mod text;

pub use console::{console, console_for};
pub use text::gate_line;

use crate::record::files;
use std::io::{Seek, Write};

use crate::error::{Error, Result};
use crate::record::rundir::write_streamed;
use crate::stats::RunData;

/// Write report.md, junit.xml and report.html into the run dir, each
/// streamed into its file (a report of 100,000 cases is never one string).
pub fn write_all(run: &RunData) -> Result<()> {
    let stream = |name: &str, render: &dyn Fn(&mut FmtIo) -> Result<()>| {
        let path = run.dir.join(name);
        write_streamed(&path, |w| {
            let mut o = FmtIo { w, at: 0, err: None };
            render(&mut o)?;
            match o.err {
                Some(e) => Err(Error::Environment(format!("{}: cannot write: {e}", path.display()))),
                None => Ok(()),
            }
        })
    };
    // Each report reads the run on its own: the three are written at once.
    std::thread::scope(|scope| {
        let md = scope.spawn(|| stream(files::REPORT_MD, &|o| md::write(run, o)));
        let junit = scope.spawn(|| {
            stream(files::JUNIT, &|o| {
                let xml = junit::render(run)?;
                let _ = std::fmt::Write::write_str(o, &xml);
                Ok(())
            })
        });
        let html = stream(files::REPORT_HTML, &|o| html::write(run, o));
        let again = std::panic::resume_unwind;
        md.join().unwrap_or_else(|e| again(e))?;
        junit.join().unwrap_or_else(|e| again(e))?;
        html
    })
}

/// `fmt::Write` into a file: the reports are written with `write!`. The
/// first I/O error is kept (and stops the writing) for the caller to report.
struct FmtIo<'a> {
    w: &'a mut std::io::BufWriter<tempfile::NamedTempFile>,
    /// Bytes written so far.
    at: u64,
    err: Option<std::io::Error>,
}

impl std::fmt::Write for FmtIo<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.err.is_some() {
            return Err(std::fmt::Error);
        }
        self.at += s.len() as u64;
        self.w.write_all(s.as_bytes()).map_err(|e| {
            self.err = Some(e);
            std::fmt::Error
        })
    }
}

impl html::Rewind for FmtIo<'_> {
    fn mark(&mut self) -> u64 {
        self.at
    }
    fn rewind(&mut self, mark: u64) {
        if self.err.is_some() || mark == self.at {
            return;
        }
        let cut = self.w.flush().and_then(|_| {
            let f = self.w.get_mut().as_file_mut();
            f.set_len(mark)?;
            f.seek(std::io::SeekFrom::Start(mark))
        });
        match cut {
            Ok(_) => self.at = mark,
            Err(e) => self.err = Some(e),
        }
    }
}
