//! A run's trials out as OpenTelemetry traces (SPEC §9): each trial is one
//! trace, a root `invoke_agent` span with an `execute_tool` child per tool
//! call and a `chat` child per model call, and a `gen_ai.evaluation.result`
//! event per check on the root, following the GenAI semantic conventions
//! (the version pinned in [`SEMCONV`]).
//!
//! The spans go through the OpenTelemetry SDK's batch span processor (a
//! bounded queue drained by its own thread) to the OTLP/HTTP protobuf
//! exporter, and/or to a file of OTLP JSON lines. Handing a span over never
//! blocks: when the queue is full the span is dropped. A wrapper around each
//! exporter counts what was delivered per trace, so the end of a run can say
//! how many trials' traces arrived whole; an export failure never changes an
//! outcome.
//!
//! Ids are derived from the run id, case and trial (see [`trace_id`]): the
//! same trial always has the same trace id, so exporting a run twice sends
//! the same spans (a trace store keeps one copy) and a viewer can find a
//! trial's trace from the run dir alone.

// The GenAI attribute names come from the semantic conventions crate, pinned
// at SEMCONV (1.42.0), which marks them as moved to the GenAI conventions'
// own repository: the names are the same, hence the allowance.
#![allow(deprecated)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks, SpanProcessor,
};
use opentelemetry_semantic_conventions::attribute as sc;
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::record::{CallStatus, Ended, Outcome, Trace, TrialRecord};

/// The semantic conventions the spans follow (written to the manifest).
pub const SEMCONV: &str = opentelemetry_semantic_conventions::SCHEMA_URL;

/// How a trial's trace id is made (written to the manifest).
pub const TRACE_ID_RULE: &str = "the first 16 bytes of SHA-256 of \"evalua/<run_id>/<case>/<trial>\", in hex";

/// The event name of a check's result on the root span.
const EVALUATION_EVENT: &str = "gen_ai.evaluation.result";

/// Longest attribute text sent (an argument, a result, an explanation).
const MAX_TEXT: usize = 32 * 1024;

/// How long the end of a run waits for the queue to drain.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(20);

/// The same, for a destination that has delivered nothing and failed every batch.
const DEAD_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);

/// A trial's trace id: see [`TRACE_ID_RULE`].
pub fn trace_id(run_id: &str, case: &str, trial: u32) -> String {
    const_hex::encode(&digest(&format!("evalua/{run_id}/{case}/{trial}"))[..16])
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

fn span_id(run_id: &str, case: &str, trial: u32, what: &str) -> SpanId {
    let d = digest(&format!("evalua/{run_id}/{case}/{trial}/{what}"));
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    if b == [0; 8] {
        b[7] = 1;
    }
    SpanId::from_bytes(b)
}

/// The OTLP/HTTP traces endpoint: `--otlp URL` (a URL without a path gets
/// `/v1/traces`), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; None when none is set.
pub fn endpoint(flag: Option<&str>) -> Result<Option<String>> {
    let check = |what: &str, url: &str| -> Result<String> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| Error::Input(format!("{what}: {url:?} is not an http:// or https:// URL")))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(Error::Input(format!("{what}: {url:?} has no host")));
        }
        Ok(url.to_string())
    };
    let with_path = |url: &str| {
        let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
        match rest.split_once('/') {
            None => format!("{url}/v1/traces"),
            Some((_, "")) => format!("{url}v1/traces"),
            Some(_) => url.to_string(),
        }
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(f) = flag {
        return check("--otlp", f).map(|u| Some(with_path(&u)));
    }
    if let Some(v) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return check("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &v).map(Some);
    }
    if let Some(v) = env("OTEL_EXPORTER_OTLP_ENDPOINT") {
        let v = check("OTEL_EXPORTER_OTLP_ENDPOINT", &v)?;
        return Ok(Some(format!("{}/v1/traces", v.trim_end_matches('/'))));
    }
    Ok(None)
}

/// Where and what to export.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The OTLP/HTTP traces endpoint (see [`endpoint`]).
    pub endpoint: Option<String>,
    /// OTLP JSON lines, one `ExportTraceServiceRequest` per line.
    pub file: Option<PathBuf>,
    /// Send inputs, answers, tool arguments and results, error texts and
    /// check explanations (`--otlp-no-content` turns it off).
    pub content: bool,
}

impl Options {
    pub fn any(&self) -> bool {
        self.endpoint.is_some() || self.file.is_some()
    }

    /// The manifest's entries for an export of the suite `project`.
    pub fn entries(&self, project: &str) -> Vec<crate::record::manifest::ExportEntry> {
        let at = jiff::Timestamp::now().to_string();
        let entry = |endpoint: Option<String>, file: Option<String>| crate::record::manifest::ExportEntry {
            at: at.clone(),
            endpoint,
            file,
            project: project.to_string(),
            semconv: SEMCONV.to_string(),
            content: self.content,
            trace_id: TRACE_ID_RULE.to_string(),
        };
        let mut out = Vec::new();
        if let Some(e) = &self.endpoint {
            out.push(entry(Some(e.clone()), None));
        }
        if let Some(f) = &self.file {
            out.push(entry(None, Some(crate::util::paths::display_path(f))));
        }
        out
    }
}

/// What reached a destination, per trace.
#[derive(Debug, Default)]
struct Delivery {
    spans: HashMap<TraceId, usize>,
    failed_batches: u64,
    last_error: Option<String>,
}

/// Wraps an exporter and counts what it delivered.
#[derive(Debug)]
struct Counting<E> {
    inner: E,
    delivery: Arc<Mutex<Delivery>>,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut per_trace: HashMap<TraceId, usize> = HashMap::new();
        for s in &batch {
            *per_trace.entry(s.span_context.trace_id()).or_default() += 1;
        }
        let result = self.inner.export(batch).await;
        if let Ok(mut d) = self.delivery.lock() {
            match &result {
                Ok(()) => {
                    for (t, n) in per_trace {
                        *d.spans.entry(t).or_default() += n;
                    }
                }
                Err(e) => {
                    d.failed_batches += 1;
                    d.last_error = Some(e.to_string());
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// OTLP JSON lines, as the OpenTelemetry collector's file exporter writes them.
struct JsonLines {
    out: Mutex<BufWriter<File>>,
    resource: ResourceAttributesWithSchema,
}

impl fmt::Debug for JsonLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JsonLines")
    }
}

impl SpanExporter for JsonLines {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let req =
            ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(batch, &self.resource) };
        let mut line = serde_json::to_vec(&req).map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        line.push(b'\n');
        let mut out = self.out.lock().map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        out.write_all(&line).and_then(|_| out.flush()).map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.into();
    }
}

struct Destination {
    name: String,
    processor: BatchSpanProcessor,
    delivery: Arc<Mutex<Delivery>>,
}

/// What an export achieved, per destination.
#[derive(Debug, Clone)]
pub struct Report {
    pub destination: String,
    pub trials: usize,
    /// Trials whose every span reached the destination.
    pub delivered: usize,
    pub last_error: Option<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.delivered == self.trials {
            write!(f, "exported {} trial trace(s) to {}", self.trials, self.destination)
        } else {
            write!(
                f,
                "export to {}: {} of {} trial trace(s) not delivered{} (outcomes are unaffected)",
                self.destination,
                self.trials - self.delivered,
                self.trials,
                self.last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_else(|| ": the queue was full".into())
            )
        }
    }
}

/// Sends trials as traces (see the module comment).
pub struct Exporter {
    destinations: Vec<Destination>,
    scope: InstrumentationScope,
    run_id: String,
    agent: String,
    content: bool,
    sent: HashMap<TraceId, usize>,
}

/// The SDK's batch settings (the standard `OTEL_BSP_*` variables apply), with
/// a larger queue and a shorter delay than its defaults unless those
/// variables set them: a fast run ends thousands of trials a second.
fn batch_config() -> opentelemetry_sdk::trace::BatchConfig {
    let mut b = BatchConfigBuilder::default();
    if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        b = b.with_max_queue_size(65_536);
    }
    if std::env::var_os("OTEL_BSP_SCHEDULE_DELAY").is_none() {
        b = b.with_scheduled_delay(Duration::from_millis(500));
    }
    b.build()
}

impl Exporter {
    /// An exporter for a run of suite `project` with id `run_id`.
    pub fn new(opts: &Options, project: &str, run_id: &str) -> Result<Exporter> {
        let resource = Resource::builder_empty()
            .with_schema_url(
                [
                    KeyValue::new(sc::SERVICE_NAME, "evalua"),
                    KeyValue::new("openinference.project.name", project.to_string()),
                    KeyValue::new("evalua.run_id", run_id.to_string()),
                ],
                SEMCONV,
            )
            .build();
        let mut destinations = Vec::new();
        if let Some(url) = &opts.endpoint {
            use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
            crate::util::tls::install();
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(url.clone())
                .with_headers(HashMap::new())
                .build()
                .map_err(|e| Error::Input(format!("--otlp {url}: {e}")))?;
            destinations.push(Self::destination(url.clone(), exporter, &resource));
        }
        if let Some(path) = &opts.file {
            let file =
                File::create(path).map_err(|e| Error::Environment(format!("{}: cannot write: {e}", path.display())))?;
            let exporter = JsonLines { out: Mutex::new(BufWriter::new(file)), resource: (&resource).into() };
            destinations.push(Self::destination(path.display().to_string(), exporter, &resource));
        }
        Ok(Exporter {
            destinations,
            scope: InstrumentationScope::builder("evalua")
                .with_version(env!("CARGO_PKG_VERSION"))
                .with_schema_url(SEMCONV)
                .build(),
            run_id: run_id.to_string(),
            agent: project.to_string(),
            content: opts.content,
            sent: HashMap::new(),
        })
    }

    fn destination<E: SpanExporter + 'static>(name: String, exporter: E, resource: &Resource) -> Destination {
        let delivery = Arc::new(Mutex::new(Delivery::default()));
        let mut counting = Counting { inner: exporter, delivery: delivery.clone() };
        counting.set_resource(resource);
        let processor = BatchSpanProcessor::builder(counting).with_batch_config(batch_config()).build();
        Destination { name, processor, delivery }
    }

    /// Hand one finished trial's spans to every destination (never blocks).
    /// `fallback_start` places a trace that has no start time of its own.
    pub fn trial(&mut self, record: &TrialRecord, trace: &Trace, fallback_start: Option<SystemTime>) {
        let spans = self.spans(record, trace, fallback_start);
        if let Some(first) = spans.first() {
            *self.sent.entry(first.span_context.trace_id()).or_default() += spans.len();
        }
        for (i, d) in self.destinations.iter().enumerate() {
            if i + 1 == self.destinations.len() {
                for s in spans {
                    d.processor.on_end(s);
                }
                break;
            }
            for s in &spans {
                d.processor.on_end(s.clone());
            }
        }
    }

    /// Flush and stop; what reached each destination.
    pub fn finish(self) -> Vec<Report> {
        let trials = self.sent.len();
        let mut out = Vec::new();
        for d in self.destinations {
            // Shutting down exports what is queued, within the timeout. A
            // destination that has failed every batch so far (a dead
            // collector: each batch would take its retries and their
            // back-off) is given only a moment: the run does not wait for it.
            let dead = d.delivery.lock().map(|g| g.spans.is_empty() && g.failed_batches > 0).unwrap_or(false);
            let _ = d.processor.shutdown_with_timeout(if dead { DEAD_FLUSH_TIMEOUT } else { FLUSH_TIMEOUT });
            let delivery = d.delivery.lock().map(|g| (g.spans.clone(), g.last_error.clone())).unwrap_or_default();
            let delivered = self.sent.iter().filter(|(t, n)| delivery.0.get(*t).copied().unwrap_or(0) >= **n).count();
            out.push(Report { destination: d.name, trials, delivered, last_error: delivery.1 });
        }
        out
    }

    fn text(&self, s: &str) -> Value {
        Value::String(StringValue::from(cut(s)))
    }

    fn spans(&self, record: &TrialRecord, trace: &Trace, fallback_start: Option<SystemTime>) -> Vec<SpanData> {
        let (case, trial) = (record.case.as_str(), record.trial);
        let tid = TraceId::from_hex(&trace_id(&self.run_id, case, trial)).unwrap_or(TraceId::INVALID);
        let root_id = span_id(&self.run_id, case, trial, "root");
        let start = trace
            .started_at
            .as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .and_then(|t| u64::try_from(t.as_nanosecond()).ok())
            .map(|ns| SystemTime::UNIX_EPOCH + Duration::from_nanos(ns))
            .or(fallback_start)
            .unwrap_or_else(SystemTime::now);
        let at = |ms: f64| start + Duration::from_secs_f64((ms.max(0.0)) / 1000.0);
        let root_end = at(record.wall_ms.max(trace.record.usage.wall_ms));
        let ctx = |id: SpanId| SpanContext::new(tid, id, TraceFlags::SAMPLED, false, TraceState::default());
        let mut out = Vec::with_capacity(trace.calls.len() + trace.model_calls.len() + 1);

        for (i, c) in trace.calls.iter().enumerate() {
            let mut attrs = vec![
                KeyValue::new(sc::GEN_AI_OPERATION_NAME, "execute_tool"),
                KeyValue::new(sc::GEN_AI_TOOL_NAME, c.name.clone()),
                KeyValue::new(sc::GEN_AI_TOOL_CALL_ID, c.id.clone()),
                KeyValue::new("evalua.tool.status", c.status.as_str()),
            ];
            if self.content {
                attrs.push(KeyValue::new(sc::GEN_AI_TOOL_CALL_ARGUMENTS, self.text(&c.args.to_string())));
                let result = match (&c.result, &c.error) {
                    (Some(r), _) => Some(json_text(r)),
                    (None, Some(e)) => Some(e.clone()),
                    _ => None,
                };
                if let Some(r) = result {
                    attrs.push(KeyValue::new(sc::GEN_AI_TOOL_CALL_RESULT, self.text(&r)));
                }
            }
            let status = if c.status == CallStatus::Executed {
                Status::Unset
            } else {
                attrs.push(KeyValue::new(
                    sc::ERROR_TYPE,
                    c.error_type.clone().unwrap_or_else(|| c.status.as_str().into()),
                ));
                Status::error(if self.content { c.error.clone().map(cut).unwrap_or_default() } else { String::new() })
            };
            out.push(self.span(
                ctx(span_id(&self.run_id, case, trial, &format!("call/{i}"))),
                root_id,
                format!("execute_tool {}", c.name),
                SpanKind::Internal,
                (at(c.started_ms), at(c.ended_ms.max(c.started_ms))),
                attrs,
                Vec::new(),
                status,
            ));
        }

        for (i, m) in trace.model_calls.iter().enumerate() {
            let mut attrs = vec![
                KeyValue::new(sc::GEN_AI_OPERATION_NAME, "chat"),
                KeyValue::new(sc::GEN_AI_PROVIDER_NAME, m.provider.clone()),
                KeyValue::new(sc::GEN_AI_REQUEST_MODEL, m.model.clone()),
                KeyValue::new(sc::GEN_AI_USAGE_INPUT_TOKENS, m.input_tokens as i64),
                KeyValue::new(sc::GEN_AI_USAGE_OUTPUT_TOKENS, m.output_tokens as i64),
                KeyValue::new("evalua.model_call.by", m.by.clone()),
            ];
            if let Some(r) = &m.finish_reason {
                attrs.push(KeyValue::new(
                    sc::GEN_AI_RESPONSE_FINISH_REASONS,
                    Value::Array(Array::String(vec![StringValue::from(r.clone())])),
                ));
            }
            if let Some(c) = m.cost_usd {
                attrs.push(KeyValue::new("evalua.cost_usd", c));
            }
            let status = match &m.error {
                Some(e) => {
                    attrs.push(KeyValue::new(sc::ERROR_TYPE, "model_error"));
                    Status::error(if self.content { cut(e.clone()) } else { String::new() })
                }
                None => Status::Unset,
            };
            out.push(self.span(
                ctx(span_id(&self.run_id, case, trial, &format!("chat/{i}"))),
                root_id,
                format!("chat {}", m.model),
                SpanKind::Client,
                (at(m.started_ms), at(m.started_ms + m.latency_ms.max(0.0))),
                attrs,
                Vec::new(),
                status,
            ));
        }

        // The root: the trial.
        let mut attrs = vec![
            KeyValue::new(sc::GEN_AI_OPERATION_NAME, "invoke_agent"),
            KeyValue::new(sc::GEN_AI_AGENT_NAME, self.agent.clone()),
            KeyValue::new(sc::GEN_AI_CONVERSATION_ID, format!("{}/{case}/{trial}", self.run_id)),
            KeyValue::new(sc::GEN_AI_USAGE_INPUT_TOKENS, record.usage.input_tokens as i64),
            KeyValue::new(sc::GEN_AI_USAGE_OUTPUT_TOKENS, record.usage.output_tokens as i64),
            KeyValue::new("evalua.case", case.to_string()),
            KeyValue::new("evalua.trial", trial as i64),
            KeyValue::new("evalua.seed", record.seed.to_string()),
            KeyValue::new("evalua.outcome", record.outcome.as_str()),
            KeyValue::new("evalua.ended", record.ended.as_str()),
            KeyValue::new("evalua.tool_calls", trace.calls.len() as i64),
        ];
        if record.usage.cost_usd > 0.0 {
            attrs.push(KeyValue::new("evalua.cost_usd", record.usage.cost_usd));
        }
        if let Some(modes) = &record.failure_modes {
            attrs.push(KeyValue::new(
                "evalua.failure_modes",
                Value::Array(Array::String(modes.iter().map(|m| StringValue::from(m.clone())).collect())),
            ));
        }
        if self.content {
            let input = json!([{ "role": "user", "parts": [{ "type": "text", "content": trace.input }] }]);
            let output = json!([{
                "role": "assistant",
                "parts": [{ "type": "text", "content": record.answer }],
                "finish_reason": if record.ended == Ended::Final { "stop" } else { record.ended.as_str() },
            }]);
            attrs.push(KeyValue::new(sc::GEN_AI_INPUT_MESSAGES, self.text(&input.to_string())));
            attrs.push(KeyValue::new(sc::GEN_AI_OUTPUT_MESSAGES, self.text(&output.to_string())));
            // OpenInference's names, which Phoenix shows as the trace's input and output.
            attrs.push(KeyValue::new("input.value", self.text(&trace.input)));
            attrs.push(KeyValue::new("output.value", self.text(&record.answer)));
        }
        let events = record
            .checks
            .iter()
            .map(|c| {
                let v = c.verdict();
                let mut a = vec![
                    KeyValue::new(sc::GEN_AI_EVALUATION_NAME, c.name.clone()),
                    KeyValue::new(sc::GEN_AI_EVALUATION_SCORE_LABEL, v.label()),
                ];
                if let Some(p) = c.passed {
                    a.push(KeyValue::new(sc::GEN_AI_EVALUATION_SCORE_VALUE, if p { 1.0 } else { 0.0 }));
                }
                if c.critical {
                    a.push(KeyValue::new("evalua.check.critical", true));
                }
                if let Some(m) = &c.monitor {
                    a.push(KeyValue::new("evalua.monitor", m.clone()));
                }
                if self.content {
                    let why = c
                        .not_applicable
                        .clone()
                        .or_else(|| c.error.clone())
                        .or_else(|| (!c.evidence.is_null()).then(|| json_text(&c.evidence)));
                    if let Some(w) = why {
                        a.push(KeyValue::new(sc::GEN_AI_EVALUATION_EXPLANATION, self.text(&w)));
                    }
                }
                opentelemetry::trace::Event::new(EVALUATION_EVENT, root_end, a, 0)
            })
            .collect();
        let status = match record.ended {
            Ended::Final | Ended::Abstained => Status::Unset,
            _ if record.outcome == Outcome::InfraError || !record.ended.by_agent() => {
                attrs.push(KeyValue::new(sc::ERROR_TYPE, record.ended.as_str()));
                Status::error(if self.content {
                    record.error.clone().map(cut).unwrap_or_default()
                } else {
                    String::new()
                })
            }
            _ => Status::Unset,
        };
        out.push(self.span(
            ctx(root_id),
            SpanId::INVALID,
            format!("invoke_agent {}", self.agent),
            SpanKind::Internal,
            (start, root_end),
            attrs,
            events,
            status,
        ));
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn span(
        &self,
        context: SpanContext,
        parent: SpanId,
        name: String,
        kind: SpanKind,
        (start, end): (SystemTime, SystemTime),
        attributes: Vec<KeyValue>,
        events: Vec<opentelemetry::trace::Event>,
        status: Status,
    ) -> SpanData {
        let mut ev = SpanEvents::default();
        ev.events = events;
        SpanData {
            span_context: context,
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: kind,
            name: Cow::Owned(name),
            start_time: start,
            end_time: end.max(start),
            attributes,
            dropped_attributes_count: 0,
            events: ev,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        }
    }
}

fn json_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Text cut to [`MAX_TEXT`] bytes (on a character boundary).
fn cut(s: impl Into<String>) -> String {
    let mut s: String = s.into();
    if s.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_follow_the_documented_rule() {
        let want = &const_hex::encode(Sha256::digest(b"evalua/r1/case_a/3"))[..32];
        assert_eq!(trace_id("r1", "case_a", 3), want);
        assert_ne!(trace_id("r1", "case_a", 3), trace_id("r1", "case_a", 4));
    }

    #[test]
    fn endpoints_get_the_traces_path_only_when_they_have_none() {
        assert_eq!(endpoint(Some("http://127.0.0.1:6006")).unwrap().unwrap(), "http://127.0.0.1:6006/v1/traces");
        assert_eq!(endpoint(Some("http://h:1/")).unwrap().unwrap(), "http://h:1/v1/traces");
        assert_eq!(endpoint(Some("https://h/otel/v1/traces")).unwrap().unwrap(), "https://h/otel/v1/traces");
        assert!(endpoint(Some("127.0.0.1:6006")).is_err());
        assert!(endpoint(Some("http://")).is_err());
    }
}
