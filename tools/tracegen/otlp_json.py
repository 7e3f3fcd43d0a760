"""Encode finished OpenTelemetry SDK spans as OTLP/JSON, the way the OpenTelemetry
Collector's file exporter writes it, and as the plain protobuf JSON mapping.

OTLP/JSON (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding) is the
protobuf JSON mapping with these differences, which `to_otlp_json` applies:
  * traceId, spanId and parentSpanId (also inside links) are lowercase hex, not base64;
  * enums (span kind, status code) are integers, not names;
  * keys are lowerCamelCase (as the protobuf JSON mapping already does).
64-bit integers (timeUnixNano, intValue) stay decimal strings, as both mappings
and the collector write them.
"""
from __future__ import annotations

import base64
import json

from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _map_ids(obj, fn):
    if isinstance(obj, dict):
        for k, v in list(obj.items()):
            if k in ID_KEYS and isinstance(v, str):
                obj[k] = fn(v)
            else:
                _map_ids(v, fn)
    elif isinstance(obj, list):
        for v in obj:
            _map_ids(v, fn)
    return obj


def b64_to_hex(s: str) -> str:
    return base64.b64decode(s).hex()


def hex_to_b64(s: str) -> str:
    return base64.b64encode(bytes.fromhex(s)).decode()


def request_of(spans) -> ExportTraceServiceRequest:
    return encode_spans(list(spans))


def to_otlp_json(spans) -> dict:
    """OTLP/JSON object (dict) of one ExportTraceServiceRequest holding `spans`."""
    d = MessageToDict(request_of(spans), use_integers_for_enums=True)
    return _map_ids(d, b64_to_hex)


def to_protobuf_json(spans) -> dict:
    """The plain protobuf JSON mapping: base64 ids, enum names."""
    return MessageToDict(request_of(spans))


def otlp_json_to_message(d: dict) -> ExportTraceServiceRequest:
    """Parse an OTLP/JSON dict back (hex ids) into the protobuf message, to validate it."""
    d = json.loads(json.dumps(d))
    _map_ids(d, hex_to_b64)
    msg = ExportTraceServiceRequest()
    ParseDict(d, msg)
    return msg


def protobuf_json_to_message(d: dict) -> ExportTraceServiceRequest:
    msg = ExportTraceServiceRequest()
    ParseDict(d, msg)
    return msg


def line(d: dict) -> str:
    """One line as the collector writes it: compact, UTF-8 kept as is."""
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def batches(spans, sizes):
    """Split spans (already in export order) into export batches of the given sizes,
    cycling through `sizes`, like a BatchSpanProcessor flushing as spans end."""
    spans = list(spans)
    out, i, k = [], 0, 0
    while i < len(spans):
        n = sizes[k % len(sizes)]
        out.append(spans[i:i + n])
        i += n
        k += 1
    return out
