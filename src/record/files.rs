//! The names of a run dir's files, relative to it. Nothing else spells
//! them: a new file of the run dir is a constant here (and, for a report,
//! an entry of [`REPORTS`], which `evalua report`, `--resume` and
//! `evalua view` all read).

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
/// The trace pack and its index (see `record::traces`).
pub const TRACES: &str = "traces/traces.jsonl";
pub const TRACES_INDEX: &str = "traces/index.jsonl";

/// The reports written from the figures (`report::write_all`).
pub const REPORTS: [&str; 3] = [REPORT_MD, REPORT_HTML, JUNIT];
