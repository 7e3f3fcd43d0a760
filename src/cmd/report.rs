//! `evalua report`: re-render report.md, report.html and junit.xml from a run
//! dir. An incomplete run (interrupted, or killed before it wrote its
//! summary) says so first, and its gates fail unless `--allow-incomplete`.

use crate::record::files;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::report::{self, github, interleaved};
use crate::stats::rundata;

pub fn report(dir: &Path, allow_incomplete: bool) -> Result<u8> {
    if files::is_interleaved(dir) {
        return report_interleaved(dir, allow_incomplete);
    }
    let data = rundata::load_with(dir, allow_incomplete)?;
    report::write_all(&data)?;
    if !data.summary_present {
        // A run killed before its end: give it the summary it never wrote.
        crate::record::rundir::write_json(&dir.join(files::SUMMARY), &data.summary_file())?;
    }
    if let Some(line) = report::text::incomplete_line(&data) {
        println!("{line}");
    }
    print_verdicts(&data.gates, &data.warnings);
    if let Some(a) = &data.adaptive {
        print!("{}", report::console::adaptive_text(a));
    }
    println!("wrote {}/{}", dir.display(), files::REPORTS.join(", "));
    Ok(if data.gates_passed() { 0 } else { 1 })
}

/// Each gate's verdict, failing ones first, then the warnings.
fn print_verdicts(gates: &[crate::spec::gate::Verdict], warnings: &[String]) {
    for g in gates.iter().filter(|g| !g.passed).chain(gates.iter().filter(|g| g.passed)) {
        println!("{}", report::gate_line(g));
    }
    for w in warnings {
        println!("warning: {w}");
    }
}

/// Re-render each agent's reports, then the side-by-side ones; the exit code
/// is the interleaved run's gates', as at the end of the run.
fn report_interleaved(dir: &Path, allow_incomplete: bool) -> Result<u8> {
    let run = crate::stats::interleaved::Interleaved::load(dir, allow_incomplete)?;
    for data in &run.runs {
        report::write_all(data)?;
    }
    interleaved::write_all(&run)?;
    print_verdicts(&run.gates, &run.warnings);
    println!(
        "wrote {}/{}, {}/{}, and each part's reports ({})",
        dir.display(),
        files::REPORT_MD,
        dir.display(),
        files::REPORT_HTML,
        run.parts.iter().map(|a| run.manifest.part_dir(dir, a).display().to_string()).collect::<Vec<_>>().join(", ")
    );
    Ok(if run.gates_passed() && run.complete() { 0 } else { 1 })
}

pub struct GithubArgs {
    pub dir: PathBuf,
    pub allow_incomplete: bool,
    /// `--baseline`: compare with this run; else the one `run --baseline` compared with.
    pub baseline: Option<PathBuf>,
    pub allow_revision_change: bool,
    pub artifact_url: Option<String>,
}

/// `evalua report RUN_DIR --format github`: print a pull-request comment body
/// (Markdown) and write nothing. Exit code as `report`: 1 when a gate failed.
pub fn github(a: GithubArgs) -> Result<u8> {
    if files::is_interleaved(&a.dir) {
        // The side-by-side report is the comment: the agents, their paired differences, the gates.
        if a.baseline.is_some() {
            return Err(crate::error::Error::Input(format!(
                "{}: an interleaved run compares its own agents; --baseline takes one agent's run dir ({})",
                a.dir.display(),
                files::agent_dir(&a.dir, "NAME").display()
            )));
        }
        let run = crate::stats::interleaved::Interleaved::load(&a.dir, a.allow_incomplete)?;
        print!("{}", interleaved::markdown(&run));
        if let Some(url) = &a.artifact_url {
            println!("\n[The run's artifact]({url})");
        }
        return Ok(if run.gates_passed() && run.complete() { 0 } else { 1 });
    }
    let data = rundata::load_with(&a.dir, a.allow_incomplete)?;
    let base = match &a.baseline {
        Some(b) => Some(rundata::load(b)?),
        None => recorded_baseline(&a.dir).and_then(|b| match rundata::load(&b) {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("warning: the baseline recorded in compare.json cannot be read ({e}): no comparison");
                None
            }
        }),
    };
    let cmp = match &base {
        Some(b) => Some(crate::stats::compare::compare(b, &data, a.allow_revision_change || a.baseline.is_none())?),
        None => None,
    };
    let links = github::Links { artifact: a.artifact_url.clone() };
    print!("{}", github::render(&data, cmp.as_ref(), &links));
    Ok(if data.gates_passed() { 0 } else { 1 })
}

/// The base run dir `run --baseline` compared with (compare.json's `base.dir`),
/// relative to the current directory as it was given, or to the run dir's
/// parent; None without a compare.json.
fn recorded_baseline(dir: &Path) -> Option<PathBuf> {
    let base = PathBuf::from(crate::stats::compare::Recorded::read(dir)?.base.dir);
    if files::is_run_dir(&base) {
        return Some(base);
    }
    eprintln!(
        "warning: {}: its baseline {} is not here: no comparison (pass --baseline)",
        dir.join(files::COMPARE_JSON).display(),
        base.display()
    );
    None
}
