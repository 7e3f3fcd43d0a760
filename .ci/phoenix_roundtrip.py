"""Start Phoenix as the tests do, send one OTLP/HTTP protobuf trace, read it back over REST.

Run with the Phoenix venv's python:  $EVALUA_CI_HOME/phoenix-venv/bin/python phoenix_roundtrip.py
Prints the cold start time, the ingestion-to-readable delay and the spans as Phoenix returns
them; exits non-zero if anything differs from what .ci/README.md says.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kv(key, value):
    if isinstance(value, int):
        return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(int_value=value))
    return common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value))


def request(url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return None, b""


def main() -> int:
    phoenix = os.environ.get("EVALUA_PHOENIX_BIN") or os.path.join(os.path.dirname(sys.executable), "phoenix")
    workdir = tempfile.mkdtemp(prefix="phoenix-ci-")
    port = free_port()
    env = dict(
        os.environ,
        PHOENIX_WORKING_DIR=workdir,
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT="0",  # any free port: a busy gRPC port aborts the start
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_LOG_MIGRATIONS="false",
    )
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(workdir, "phoenix.log"), "wb")
    t0 = time.time()
    proc = subprocess.Popen([phoenix, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ok = False
    try:
        while time.time() - t0 < 120:
            if proc.poll() is not None:
                print("phoenix exited early with", proc.returncode)
                print(open(os.path.join(workdir, "phoenix.log")).read()[-3000:])
                return 1
            if request(base + "/healthz")[0] == 200:
                break
            time.sleep(0.2)
        else:
            print("phoenix not healthy after 120 s")
            return 1
        print(f"cold start: {time.time() - t0:.1f}s until GET /healthz answered 200")

        project = "evalua-ci-roundtrip"
        now = time.time_ns()
        trace_id, root_id, tool_id = os.urandom(16), os.urandom(8), os.urandom(8)
        root = trace_pb2.Span(
            trace_id=trace_id, span_id=root_id, name="invoke_agent refunds",
            start_time_unix_nano=now - 3_000_000, end_time_unix_nano=now,
            attributes=[kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.agent.name", "refunds"),
                        kv("gen_ai.conversation.id", "run1/case1/1"), kv("gen_ai.usage.input_tokens", 12)])
        tool = trace_pb2.Span(
            trace_id=trace_id, span_id=tool_id, parent_span_id=root_id, name="execute_tool lookup_order",
            start_time_unix_nano=now - 2_000_000, end_time_unix_nano=now - 1_000_000,
            attributes=[kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "lookup_order"),
                        kv("gen_ai.tool.call.arguments", '{"id": 4821}')],
            status=trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message="rate limited"))
        body = ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(
            resource=resource_pb2.Resource(attributes=[kv("service.name", "evalua"),
                                                       kv("openinference.project.name", project)]),
            scope_spans=[trace_pb2.ScopeSpans(spans=[root, tool])])]).SerializeToString()

        status, _ = request(base + "/v1/projects/" + project + "/spans")
        print(f"GET spans before the first span: {status}")
        for ct, want in (("application/json", 415), ("application/x-protobuf; charset=utf-8", 415)):
            status, _ = request(base + "/v1/traces", body, {"Content-Type": ct})
            print(f"POST /v1/traces Content-Type {ct!r}: {status}")
            if status != want:
                return 1
        t1 = time.time()
        status, _ = request(base + "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        print(f"POST /v1/traces Content-Type 'application/x-protobuf': {status}")
        if status != 200:
            return 1
        while time.time() - t1 < 30:
            status, data = request(base + f"/v1/projects/{project}/spans?limit=100")
            if status == 200 and json.loads(data)["data"]:
                break
            time.sleep(0.05)
        else:
            print("spans not readable after 30 s")
            return 1
        print(f"ingestion to readable: {time.time() - t1:.2f}s")
        spans = json.loads(data)
        print(json.dumps(spans, indent=1))
        by_name = {s["name"]: s for s in spans["data"]}
        t = by_name["execute_tool lookup_order"]
        r = by_name["invoke_agent refunds"]
        ok = (
            t["span_kind"] == "TOOL" and r["span_kind"] == "AGENT"
            and t["status_code"] == "ERROR" and t["status_message"] == "rate limited"
            and t["context"] == {"trace_id": trace_id.hex(), "span_id": tool_id.hex()}
            and t["parent_id"] == root_id.hex() and r["parent_id"] is None
            and t["attributes"]["gen_ai.tool.name"] == "lookup_order"
            and r["attributes"]["session.id"] == "run1/case1/1"
        )
        print("shape as documented:", ok)
        return 0 if ok else 1
    finally:
        t2 = time.time()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        print(f"stopped (SIGTERM) in {time.time() - t2:.1f}s")
        log.close()
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("phoenix log kept in", workdir)


if __name__ == "__main__":
    sys.exit(main())
