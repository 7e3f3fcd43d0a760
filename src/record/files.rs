//! The names of a run dir's files, relative to it. Nothing else spells
//! them: a new file of the run dir is a constant here (and, for a report,
//! an entry of [`REPORTS`], which `evalua report`, `--resume` and
//! `evalua view` all read).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The run-dir format this evalua writes (manifest.json's and
/// interleaved.json's `format`). Raise it when a file's form changes in a
/// way an older evalua would misread; a reader refuses a newer format.
pub const FORMAT: u32 = 1;

/// The serialized form of a run-dir file (a manifest, a record, a block, a
/// summary). Only `record/` (and `stats/`, for summary.json and
/// compare.json) implement it, and every JSON file of a run dir is written
/// through it (`rundir::write_json`): `tests/architecture.rs` checks.
pub trait RunDirFile: serde::Serialize {}

/// Refuse a run-dir file written in a newer format than this evalua reads.
pub fn readable_format(path: &Path, format: u32) -> Result<()> {
    if format > FORMAT {
        return Err(Error::Input(format!(
            "{}: written in run-dir format {format} by a newer evalua; this one ({}) reads formats up to {FORMAT}",
            path.display(),
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(())
}

pub const MANIFEST: &str = "manifest.json";
pub const TRIALS: &str = "trials.jsonl";
/// trials.jsonl as it is rewritten, before it replaces the file.
pub const TRIALS_TMP: &str = "trials.jsonl.tmp";
pub const SUMMARY: &str = "summary.json";
pub const REPORT_MD: &str = "report.md";
pub const REPORT_HTML: &str = "report.html";
pub const JUNIT: &str = "junit.xml";
pub const COMPARE_JSON: &str = "compare.json";
pub const COMPARE_MD: &str = "compare.md";
/// The dir of the trace pack and of each trial's kept state
/// (`<case>.<trial>.changeset`, `.files/`, …).
pub const TRACES_DIR: &str = "traces";
/// The trace pack and its index (see `record::traces`).
pub const TRACES: &str = "traces/traces.jsonl";
pub const TRACES_INDEX: &str = "traces/index.jsonl";

/// An interleaved run of several agents (`evalua run SUITE --agent A --agent B`):
/// what the run is, its blocks, and the dir of each agent's part (`agents/<name>/`).
pub const INTERLEAVED: &str = "interleaved.json";
pub const BLOCKS: &str = "blocks.jsonl";
pub const AGENTS_DIR: &str = "agents";
/// A run of perturbations (`evalua run SUITE --perturb`): the dir of each
/// condition's part (`conditions/baseline/`, `conditions/<perturbation>/`).
pub const CONDITIONS_DIR: &str = "conditions";

/// The reports written from the figures (`report::write_all`).
pub const REPORTS: [&str; 3] = [REPORT_MD, REPORT_HTML, JUNIT];

/// Whether `dir` is a run dir: it holds a manifest.json. Every command that
/// tells a run dir from another folder asks here.
pub fn is_run_dir(dir: &Path) -> bool {
    dir.join(MANIFEST).is_file()
}

/// Whether `dir` is the top dir of an interleaved run (its agents' run dirs under [`AGENTS_DIR`]).
pub fn is_interleaved(dir: &Path) -> bool {
    dir.join(INTERLEAVED).is_file()
}

/// Where agent `name`'s run dir is inside an interleaved run's dir.
pub fn agent_dir(top: &Path, name: &str) -> PathBuf {
    top.join(AGENTS_DIR).join(name)
}

/// Where condition `name`'s run dir is inside a run of perturbations' dir.
pub fn condition_dir(top: &Path, name: &str) -> PathBuf {
    top.join(CONDITIONS_DIR).join(name)
}

/// Whether a record's `trace` field names a file inside [`TRACES_DIR`] (and
/// nowhere else: no `..`, no backslash). A results file is untrusted input.
pub fn in_traces_dir(rel: &str) -> bool {
    rel.strip_prefix(TRACES_DIR).is_some_and(|r| r.starts_with('/')) && !rel.contains("..") && !rel.contains('\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_outside_the_traces_dir_is_refused() {
        assert!(in_traces_dir(TRACES));
        assert!(in_traces_dir("traces/a.0.json"));
        for bad in ["traces", "tracesX/a", "/traces/a", "traces/../manifest.json", "traces\\a", "summary.json"] {
            assert!(!in_traces_dir(bad), "{bad}");
        }
    }
}
