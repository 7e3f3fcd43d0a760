//! `evalua export RUN_DIR --otlp URL | --otlp-file F`: send a finished run's
//! trials as OpenTelemetry GenAI traces (SPEC §9), and record the export in
//! its manifest.

use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::otel::export::{Exporter, Options, Report};
use crate::record::RunDir;
use crate::record::manifest::Manifest;

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
    manifest.exports.extend(opts.entries(&manifest.suite.name));
    run.write_manifest(&manifest)?;
    if let Some(r) = reports.iter().find(|r| r.delivered < r.trials) {
        return Err(Error::Environment(r.to_string()));
    }
    Ok(0)
}
