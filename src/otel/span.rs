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
/// times (RFC 3339 text or Unix nanoseconds), `status` (`"ok"` / `"error"`, or
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
    #[serde(
        default,
        alias = "startTime",
        alias = "start_time_unix_nano",
        alias = "startTimeUnixNano",
        alias = "start"
    )]
    pub start_time: Option<Json>,
    #[serde(default, alias = "endTime", alias = "end_time_unix_nano", alias = "endTimeUnixNano", alias = "end")]
    pub end_time: Option<Json>,
    #[serde(default)]
    pub status: Option<Json>,
    #[serde(default, alias = "status_message", alias = "statusMessage")]
    pub status_message: Option<String>,
    #[serde(default)]
    pub attributes: Option<Map<String, Json>>,
    #[serde(default)]
    pub events: Option<Vec<Json>>,
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

/// A time as Unix nanoseconds: a number (ns), digits in a string, or RFC 3339 text.
fn time_ns(v: &Json) -> Option<u64> {
    match v {
        Json::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        Json::String(s) => s.parse::<u64>().ok().or_else(|| {
            let ts: jiff::Timestamp = s.parse().ok()?;
            u64::try_from(ts.as_nanosecond()).ok()
        }),
        _ => None,
    }
}

impl FlatSpan {
    /// The span, or why this object is not one.
    pub fn into_span(self) -> Result<Span, String> {
        let trace_id = id_text(&self.trace_id).ok_or("no trace_id")?;
        let span_id = id_text(&self.span_id).ok_or("no span_id")?;
        let start_ns = self.start_time.as_ref().and_then(time_ns).ok_or("no readable start time")?;
        let end_ns = self.end_time.as_ref().and_then(time_ns).unwrap_or(start_ns).max(start_ns);
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
}
