//! `evalua export RUN_DIR --otlp URL | --otlp-file F`: send a finished run's
//! trials as OpenTelemetry GenAI traces (SPEC §9), and record the export in
//! its manifest.

use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::otel::export::{self, Exporter, Options, Report};
use crate::record::RunDir;
use crate::record::manifest::{ExportEntry, Manifest};
use crate::util::paths::display_path;

/// The manifest's entries for an export with `opts` of the suite `project`.
pub fn entries(opts: &Options, project: &str) -> Vec<ExportEntry> {
    let at = jiff::Timestamp::now().to_string();
    let entry = |endpoint: Option<String>, file: Option<String>| ExportEntry {
        at: at.clone(),
        endpoint,
        file,
        project: project.to_string(),
        semconv: export::SEMCONV.to_string(),
        content: opts.content,
        trace_id: export::TRACE_ID_RULE.to_string(),
    };
    let mut out = Vec::new();
    if let Some(e) = &opts.endpoint {
        out.push(entry(Some(e.clone()), None));
    }
    if let Some(f) = &opts.file {
        out.push(entry(None, Some(display_path(f))));
    }
    out
}

fn start_of(m: &Manifest) -> Option<SystemTime> {
    let ts: jiff::Timestamp = m.started_at.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(ts.as_nanosecond()).ok()?))
}

pub fn export(dir: &std::path::Path, opts: Options) -> Result<u8> {
    if !opts.any() {
        return Err(Error::Input(
            "evalua export: give --otlp URL or --otlp-file FILE (or set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)".into(),
        ));
    }
    let run = RunDir::open(dir)?;
    let mut manifest = run.read_manifest()?;
    let mut exporter = Exporter::new(&opts, &manifest.suite.name, &manifest.run_id)?;
    let fallback = start_of(&manifest);
    let mut missing = 0usize;
    for rec in run.records()? {
        let (_, _, record) = rec?;
        match run.read_trace(&record) {
            Some(trace) => exporter.trial(&record, &trace, fallback),
            None => missing += 1,
        }
    }
    let reports: Vec<Report> = exporter.finish();
    for r in &reports {
        println!("{r}");
    }
    if missing > 0 {
        eprintln!("warning: {missing} trial(s) have no readable trace in traces/: not exported");
    }
    manifest.exports.extend(entries(&opts, &manifest.suite.name));
    run.write_manifest(&manifest)?;
    if let Some(r) = reports.iter().find(|r| r.delivered < r.trials) {
        return Err(Error::Environment(r.to_string()));
    }
    Ok(0)
}
