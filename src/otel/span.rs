//! A span as `evalua grade` reads it, whatever file it came from: OTLP JSON
//! (through `opentelemetry-proto`'s serde types) or a flat span line.

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1 as proto;
use serde::Deserialize;
use serde_json::{Map, Value as Json};

/// A span's status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Status {
    #[default]
    Unset,
    Ok,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unset => "unset",
            Status::Ok => "ok",
            Status::Error => "error",
        }
    }
}

/// A span event (an exception, an evaluation result, …).
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub name: String,
    pub time_ns: u64,
    pub attributes: Map<String, Json>,
}

/// One span, with ids in lowercase hex and attributes as JSON values.
#[derive(Debug, Clone, Default)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    /// `internal`, `server`, `client`, `producer`, `consumer`, when known.
    pub kind: Option<String>,
    /// Unix time in nanoseconds.
    pub start_ns: u64,
    pub end_ns: u64,
    pub status: Status,
    pub status_message: String,
    pub attributes: Map<String, Json>,
    pub events: Vec<Event>,
}

impl Span {
    /// An attribute as text (a string, or a number or boolean written out).
    pub fn text(&self, key: &str) -> Option<String> {
        match self.attributes.get(key)? {
            Json::String(s) => Some(s.clone()),
            Json::Null => None,
            v => Some(v.to_string()),
        }
    }

    /// An attribute as a non-negative integer (ints, doubles, or digits in a string).
    pub fn count(&self, key: &str) -> Option<u64> {
        match self.attributes.get(key)? {
            Json::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn number(&self, key: &str) -> Option<f64> {
        match self.attributes.get(key)? {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn duration_ms(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e6
    }
}

/// An OTLP `AnyValue` as JSON: strings, numbers, booleans, arrays and maps as
/// themselves; bytes as base64 text. Takes the value: its strings (a chat
/// span's messages are the whole conversation) move instead of being copied.
pub fn any_to_json(v: AnyValue) -> Json {
    match v.value {
        None => Json::Null,
        Some(any_value::Value::StringValue(s)) => Json::String(s),
        Some(any_value::Value::BoolValue(b)) => Json::Bool(b),
        Some(any_value::Value::IntValue(i)) => Json::from(i),
        Some(any_value::Value::DoubleValue(d)) => {
            serde_json::Number::from_f64(d).map(Json::Number).unwrap_or(Json::Null)
        }
        Some(any_value::Value::ArrayValue(a)) => Json::Array(a.values.into_iter().map(any_to_json).collect()),
        Some(any_value::Value::KvlistValue(kv)) => Json::Object(attributes(kv.values)),
        Some(any_value::Value::BytesValue(b)) => Json::String(base64_encode(&b)),
        #[allow(unreachable_patterns)]
        Some(_) => Json::Null,
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn attributes(kvs: Vec<KeyValue>) -> Map<String, Json> {
    kvs.into_iter().map(|kv| (kv.key, kv.value.map(any_to_json).unwrap_or(Json::Null))).collect()
}

fn hex(bytes: &[u8]) -> String {
    const_hex::encode(bytes)
}

const KINDS: [&str; 6] = ["", "internal", "server", "client", "producer", "consumer"];

impl From<proto::Span> for Span {
    fn from(s: proto::Span) -> Span {
        let (status, status_message) = match s.status {
            Some(st) => (
                match st.code {
                    1 => Status::Ok,
                    2 => Status::Error,
                    _ => Status::Unset,
                },
                st.message,
            ),
            None => (Status::Unset, String::new()),
        };
        Span {
            trace_id: hex(&s.trace_id),
            span_id: hex(&s.span_id),
            parent_span_id: (!s.parent_span_id.is_empty()).then(|| hex(&s.parent_span_id)),
            name: s.name,
            kind: KINDS.get(s.kind as usize).filter(|k| !k.is_empty()).map(|k| k.to_string()),
            start_ns: s.start_time_unix_nano,
            end_ns: s.end_time_unix_nano.max(s.start_time_unix_nano),
            status,
            status_message,
            attributes: attributes(s.attributes),
            events: s
                .events
                .into_iter()
                .map(|e| Event { name: e.name, time_ns: e.time_unix_nano, attributes: attributes(e.attributes) })
                .collect(),
        }
    }
}

/// A span written as one flat JSON object (simple exporters, home-grown
/// tracers): `trace_id`, `span_id`, `parent_span_id`, `name`, start and end
/// times (see [`START_KEYS`]: `start_time`, `start_ns`, `start_time_unix_nano`,
/// `started_at`, … as RFC 3339 text, Unix seconds, milliseconds,
/// microseconds or nanoseconds), `status` (`"ok"` / `"error"`, or
/// `{ code, message }`), `attributes` as a flat map.
#[derive(Debug, Deserialize)]
pub struct FlatSpan {
    #[serde(alias = "traceId", alias = "trace")]
    pub trace_id: Json,
    #[serde(alias = "spanId", alias = "id")]
    pub span_id: Json,
    #[serde(default, alias = "parentSpanId", alias = "parent_id", alias = "parentId")]
    pub parent_span_id: Option<Json>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub kind: Option<Json>,
    #[serde(default)]
    pub status: Option<Json>,
    #[serde(default, alias = "status_message", alias = "statusMessage")]
    pub status_message: Option<String>,
    #[serde(default)]
    pub attributes: Option<Map<String, Json>>,
    #[serde(default)]
    pub events: Option<Vec<Json>>,
    /// Every other key: the times are found among them ([`START_KEYS`], [`END_KEYS`], [`DURATION_KEYS`]).
    #[serde(flatten)]
    pub rest: Map<String, Json>,
}

/// The keys a flat span's start time is read from, in this order: its unit
/// comes from the key's suffix (`_ns`, `_unix_nano` / `UnixNano`, `_ms`,
/// `_us`, `_s`); a key without one holds RFC 3339 text (`2026-11-03T08:12:55.145Z`;
/// without an offset, UTC) or a number whose size says its unit (Unix seconds
/// below 10^11, which may have a fraction; milliseconds below 10^14;
/// microseconds below 10^17; else nanoseconds).
pub const START_KEYS: &[&str] = &[
    "start_time_unix_nano",
    "startTimeUnixNano",
    "start_unix_nano",
    "startUnixNano",
    "start_time_ns",
    "start_ns",
    "startNs",
    "start_time_us",
    "start_us",
    "start_time_ms",
    "start_ms",
    "startMs",
    "start_time_s",
    "start_s",
    "start_time",
    "startTime",
    "start",
    "started_at",
    "startedAt",
    "start_timestamp",
    "timestamp",
];

/// The keys a flat span's end time is read from (units as for [`START_KEYS`]).
pub const END_KEYS: &[&str] = &[
    "end_time_unix_nano",
    "endTimeUnixNano",
    "end_unix_nano",
    "endUnixNano",
    "end_time_ns",
    "end_ns",
    "endNs",
    "end_time_us",
    "end_us",
    "end_time_ms",
    "end_ms",
    "endMs",
    "end_time_s",
    "end_s",
    "end_time",
    "endTime",
    "end",
    "ended_at",
    "endedAt",
    "end_timestamp",
];

/// Without an end time, a duration gives it (units by suffix).
pub const DURATION_KEYS: &[&str] = &[
    "duration_ns",
    "durationNs",
    "duration_us",
    "duration_ms",
    "durationMs",
    "duration_s",
    "latency_ms",
    "elapsed_ms",
];

/// A time's unit, from its key's suffix.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Ns,
    Us,
    Ms,
    S,
}

impl Unit {
    fn of_key(key: &str) -> Option<Unit> {
        let k = key.to_ascii_lowercase();
        if k.ends_with("nano") || k.ends_with("ns") || k.ends_with("nanos") {
            Some(Unit::Ns)
        } else if k.ends_with("_us") || k.ends_with("micros") {
            Some(Unit::Us)
        } else if k.ends_with("ms") || k.ends_with("millis") {
            Some(Unit::Ms)
        } else if k.ends_with("_s") || k.ends_with("_sec") || k.ends_with("_secs") || k.ends_with("_seconds") {
            Some(Unit::S)
        } else {
            None
        }
    }
    /// A Unix time's unit, from its size (see [`START_KEYS`]).
    fn guess(v: f64) -> Unit {
        match v.abs() {
            v if v < 1e11 => Unit::S,
            v if v < 1e14 => Unit::Ms,
            v if v < 1e17 => Unit::Us,
            _ => Unit::Ns,
        }
    }
    fn ns_per(self) -> u64 {
        match self {
            Unit::Ns => 1,
            Unit::Us => 1_000,
            Unit::Ms => 1_000_000,
            Unit::S => 1_000_000_000,
        }
    }
}

/// A number in `unit` (or a unit its size says) as nanoseconds.
fn number_ns(n: &serde_json::Number, unit: Option<Unit>) -> Option<u64> {
    if let Some(i) = n.as_u64() {
        let unit = unit.unwrap_or_else(|| Unit::guess(i as f64));
        return i.checked_mul(unit.ns_per());
    }
    let f = n.as_f64().filter(|f| f.is_finite() && *f >= 0.0)?;
    let unit = unit.unwrap_or_else(|| Unit::guess(f));
    // A float carries about 16 digits: Unix seconds with a fraction are
    // exact to the microsecond at best, so that is where they are rounded.
    let us = f * unit.ns_per() as f64 / 1000.0;
    (us < (u64::MAX / 1000) as f64).then_some(us.round() as u64 * 1000)
}

/// A time under `key` as Unix nanoseconds.
fn keyed_time_ns(key: &str, v: &Json) -> Option<u64> {
    let unit = Unit::of_key(key);
    match v {
        Json::Number(n) => number_ns(n, unit),
        Json::String(s) => {
            let t = s.trim();
            if let Ok(n) = t.parse::<serde_json::Number>() {
                return number_ns(&n, unit);
            }
            text_time_ns(t)
        }
        _ => None,
    }
}

/// RFC 3339 text (`2026-11-03T08:12:55.145Z`), or a date and time without an
/// offset (`2026-11-03 08:12:55.145`), read as UTC.
fn text_time_ns(t: &str) -> Option<u64> {
    let ts: jiff::Timestamp = match t.parse() {
        Ok(ts) => ts,
        // No offset: UTC.
        Err(_) => {
            let _: jiff::civil::DateTime = t.parse().ok()?;
            format!("{}Z", t.replacen(' ', "T", 1)).parse().ok()?
        }
    };
    u64::try_from(ts.as_nanosecond()).ok()
}

/// The first of `keys` present in `rest` that holds a readable time.
fn find_time(rest: &Map<String, Json>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| rest.get(*k).and_then(|v| keyed_time_ns(k, v)))
}

/// A duration under one of [`DURATION_KEYS`], in nanoseconds.
fn find_duration(rest: &Map<String, Json>) -> Option<u64> {
    DURATION_KEYS.iter().find_map(|k| match rest.get(*k)? {
        Json::Number(n) => number_ns(n, Some(Unit::of_key(k).unwrap_or(Unit::Ms))),
        _ => None,
    })
}

fn id_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) if !s.is_empty() => Some(normalize_id(s)),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An id as lowercase hex: hex is kept (lowercased), base64 of 8 or 16 bytes
/// (the plain protobuf JSON mapping) is turned into hex, anything else stays
/// as written.
pub fn normalize_id(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return s.to_ascii_lowercase();
    }
    match base64_decode(s) {
        Some(b) if b.len() == 8 || b.len() == 16 => hex(&b),
        _ => s.to_string(),
    }
}

/// Base64 (standard or URL-safe alphabet, padded or not) decoded.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|e| e.decode(s).ok())
}

/// An event's time as Unix nanoseconds: a number (its size says its unit),
/// digits in a string, or RFC 3339 text.
fn time_ns(v: &Json) -> Option<u64> {
    keyed_time_ns("time", v)
}

impl FlatSpan {
    /// The span, or why this object is not one.
    pub fn into_span(self) -> Result<Span, String> {
        let trace_id = id_text(&self.trace_id).ok_or("no trace_id")?;
        let span_id = id_text(&self.span_id).ok_or("no span_id")?;
        let start_ns = find_time(&self.rest, START_KEYS).ok_or_else(|| {
            let timeish: Vec<&String> = self.rest.keys().filter(|k| k.to_ascii_lowercase().contains("start")).collect();
            if timeish.is_empty() {
                "no start time (read from start_time, start_ns, start_time_unix_nano, started_at, timestamp, …)"
                    .to_string()
            } else {
                format!("no readable start time in {timeish:?} (RFC 3339 text or Unix s / ms / µs / ns)")
            }
        })?;
        let end_ns = find_time(&self.rest, END_KEYS)
            .or_else(|| find_duration(&self.rest).map(|d| start_ns.saturating_add(d)))
            .unwrap_or(start_ns)
            .max(start_ns);
        let (status, message) = match &self.status {
            Some(Json::String(s)) => (status_word(s), String::new()),
            Some(Json::Object(o)) => (
                o.get("code").or(o.get("status_code")).map(status_of).unwrap_or_default(),
                o.get("message").or(o.get("description")).and_then(|m| m.as_str()).unwrap_or_default().to_string(),
            ),
            Some(n @ Json::Number(_)) => (status_of(n), String::new()),
            _ => (Status::Unset, String::new()),
        };
        Ok(Span {
            trace_id,
            span_id,
            parent_span_id: self.parent_span_id.as_ref().and_then(id_text),
            name: self.name,
            kind: self.kind.as_ref().and_then(|k| k.as_str()).map(|k| k.to_ascii_lowercase()),
            start_ns,
            end_ns,
            status,
            status_message: self.status_message.unwrap_or(message),
            attributes: self.attributes.unwrap_or_default(),
            events: self
                .events
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| {
                    let o = e.as_object()?;
                    Some(Event {
                        name: o.get("name")?.as_str()?.to_string(),
                        time_ns: o.get("time").or(o.get("timestamp")).and_then(time_ns).unwrap_or(start_ns),
                        attributes: o.get("attributes").and_then(|a| a.as_object()).cloned().unwrap_or_default(),
                    })
                })
                .collect(),
        })
    }
}

fn status_word(s: &str) -> Status {
    match s.to_ascii_lowercase().trim_start_matches("status_code_") {
        "ok" => Status::Ok,
        "error" | "err" | "failed" | "failure" => Status::Error,
        _ => Status::Unset,
    }
}

fn status_of(v: &Json) -> Status {
    match v {
        Json::Number(n) => match n.as_i64() {
            Some(1) => Status::Ok,
            Some(2) => Status::Error,
            _ => Status::Unset,
        },
        Json::String(s) => status_word(s),
        _ => Status::Unset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_base64_become_hex() {
        // 16 bytes 0x00..0x0f in base64, as protobuf JSON writes a trace id.
        assert_eq!(normalize_id("AAECAwQFBgcICQoLDA0ODw=="), "000102030405060708090a0b0c0d0e0f");
        assert_eq!(normalize_id("ABCDEF0123456789"), "abcdef0123456789");
        assert_eq!(base64_encode(&[0xff, 0x00, 0x10]), "/wAQ");
        assert_eq!(base64_decode("/wAQ").unwrap(), vec![0xff, 0x00, 0x10]);
    }

    #[test]
    fn flat_spans_read_rfc3339_and_status_words() {
        let j = serde_json::json!({"trace_id": "AB", "span_id": "cd", "parent_span_id": null, "name": "tool.x",
            "start_time": "2026-11-03T08:12:55.145120Z", "end_time": "2026-11-03T08:12:55.496311Z",
            "status": "error", "attributes": {"acme.tool": "x"}});
        let s = serde_json::from_value::<FlatSpan>(j).unwrap().into_span().unwrap();
        assert_eq!((s.trace_id.as_str(), s.status), ("ab", Status::Error));
        assert!((s.duration_ms() - 351.191).abs() < 1e-6);
        assert_eq!(s.parent_span_id, None);
    }

    #[test]
    fn flat_spans_read_the_common_spellings_of_times() {
        // 2026-11-03T08:12:55.145Z and 351 ms later, every way tracers write them.
        let (start, end) = (1_793_693_575_145_000_000u64, 1_793_693_575_496_000_000u64);
        let cases = [
            serde_json::json!({"start_ns": start, "end_ns": end}),
            serde_json::json!({"start_time_unix_nano": start.to_string(), "end_time_unix_nano": end.to_string()}),
            serde_json::json!({"startTimeUnixNano": start, "endTimeUnixNano": end}),
            serde_json::json!({"start_ms": 1_793_693_575_145u64, "end_ms": 1_793_693_575_496u64}),
            serde_json::json!({"start_time": 1_793_693_575.145, "end_time": 1_793_693_575.496}),
            serde_json::json!({"start_time": "2026-11-03T08:12:55.145Z", "end_time": "2026-11-03T08:12:55.496Z"}),
            serde_json::json!({"started_at": "2026-11-03 08:12:55.145", "ended_at": "2026-11-03T09:12:55.496+01:00"}),
            serde_json::json!({"timestamp": "2026-11-03T08:12:55.145Z", "duration_ms": 351}),
            serde_json::json!({"start": 1_793_693_575_145_000u64, "end": 1_793_693_575_496_000u64}),
        ];
        for c in cases {
            let mut j = c.clone();
            j["trace_id"] = "t1".into();
            j["span_id"] = "s1".into();
            let s = serde_json::from_value::<FlatSpan>(j).unwrap().into_span().unwrap();
            let ms = |ns: u64| ns / 1_000_000;
            assert_eq!((ms(s.start_ns), ms(s.end_ns)), (ms(start), ms(end)), "{c}");
        }
        let j = serde_json::json!({"trace_id": "t", "span_id": "s", "start_ns": "soon"});
        let e = serde_json::from_value::<FlatSpan>(j).unwrap().into_span().unwrap_err();
        assert!(e.contains("no readable start time in [\"start_ns\"]"), "{e}");
    }
}
