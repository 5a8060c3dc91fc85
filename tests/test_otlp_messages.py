"""The OTLP messages mcptape builds without the OpenTelemetry SDK: trace context, spans,
histograms, the resource, and the OTLP/HTTP client (retries, headers, compression)."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from mcptape.telemetry.conventions import BUCKETS, Operation, SessionFacts
from mcptape.telemetry.histograms import CARDINALITY_LIMIT, Histograms
from mcptape.telemetry.otlp_http import OtlpHttp, env_headers
from mcptape.telemetry.pipeline import OtlpJsonLines, Pipeline
from mcptape.telemetry.resource import resource_attributes
from mcptape.telemetry.spans import HAS_IS_REMOTE, IS_REMOTE, SpanBatch
from mcptape.telemetry.tracecontext import parent, tracestate
from tests.helpers.otlp import attributes

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


@pytest.mark.parametrize(
    ("header", "sampled"),
    [
        (f"00-{TRACE}-{SPAN}-01", True),
        (f"00-{TRACE}-{SPAN}-00", False),
        (f"  00-{TRACE}-{SPAN}-03 ", True),
        (f"cc-{TRACE}-{SPAN}-01-what-comes-later", True),  # a later version may add fields
    ],
)
def test_a_traceparent_names_the_callers_span(header: str, sampled: bool) -> None:
    found = parent(header)
    assert found is not None
    assert (found.trace_id.hex(), found.span_id.hex(), found.sampled) == (TRACE, SPAN, sampled)


@pytest.mark.parametrize(
    "header",
    [
        f"00-{'0' * 32}-{SPAN}-01",  # all-zero ids
        f"00-{TRACE}-{'0' * 16}-01",
        f"ff-{TRACE}-{SPAN}-01",  # version ff is invalid
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
        f"00-{TRACE.upper()}-{SPAN}-01",  # lowercase hex only
        f"00-{TRACE}-{SPAN}",
        "00-a-b-01",
        "",
        "x" * 600,
    ],
)
def test_a_malformed_traceparent_is_no_parent(header: str) -> None:
    assert parent(header) is None


def test_a_tracestate_is_kept_whole_or_dropped_whole() -> None:
    assert tracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE") == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    assert tracestate("tenant@vendor=v1,,") == "tenant@vendor=v1"
    assert tracestate("rojo=1,rojo=2") == ""  # a repeated key
    assert tracestate("Rojo=1") == ""  # keys are lowercase
    assert tracestate(",".join(f"k{i}=v" for i in range(33))) == ""  # more than 32 members
    found = parent(f"00-{TRACE}-{SPAN}-01", "rojo=1,bad key=2")
    assert found is not None and found.tracestate == ""  # the parent is kept without its state


def _op(**kw: Any) -> Operation:
    session = SessionFacts("record", "stdio->stdio", recording_id="rec1", protocol_version="2025-06-18")
    fields: dict[str, Any] = {"rpc_id": "7", "tool": "echo", "session": session, "answered_by": "server"}
    fields.update(kw)
    return Operation("tools/call", "c2s", 10.0, 10.25, **fields)


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_a_span_continues_its_callers_trace_with_every_attribute() -> None:
    batch = SpanBatch()
    op = _op(traceparent=f"00-{TRACE}-{SPAN}-01", tracestate="rojo=1")
    assert batch.add(op)
    assert batch.add(_op(rpc_id="8", error_type="-32602", error_code="-32602", error_message="bad"))
    request, count = batch.take()
    assert count == 2 and batch.count == 0
    first, second = _spans(ExportTraceServiceRequest.FromString(request.SerializeToString()))
    assert (first.trace_id.hex(), first.parent_span_id.hex(), first.trace_state) == (TRACE, SPAN, "rojo=1")
    assert first.flags == HAS_IS_REMOTE | IS_REMOTE and len(first.span_id) == 8
    assert (first.name, first.kind) == ("tools/call echo", Span.SpanKind.SPAN_KIND_CLIENT)
    assert (first.start_time_unix_nano, first.end_time_unix_nano) == (10_000_000_000, 10_250_000_000)
    assert attributes(first.attributes) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
        "mcp.session.id": "rec1",
        "mcptape.session.id": "rec1",
        "mcptape.mode": "record",
        "mcptape.answered_by": "server",
        "jsonrpc.request.id": "7",
    }
    assert first.status.code == 0 and first.HasField("status")
    # a span of its own trace: a fresh trace id, no parent; the shared attribute block reused
    assert len(second.trace_id) == 16 and second.trace_id != first.trace_id and not second.parent_span_id
    assert second.flags == HAS_IS_REMOTE
    assert attributes(second.attributes)["jsonrpc.request.id"] == "8"
    assert attributes(second.attributes)["error.type"] == "-32602"
    assert (second.status.code, second.status.message) == (2, "bad")


def test_a_caller_that_did_not_sample_its_trace_gets_no_span_but_its_duration_counts() -> None:
    out: list[Any] = []

    class Keep:
        where = "memory"
        failure: str | None = None

        def spans(self, request: Any) -> bool:
            out.append(request)
            return True

        def metrics(self, request: Any) -> bool:
            out.append(request)
            return True

        def close(self) -> None:
            pass

    pipeline = Pipeline(Keep())
    pipeline.add(_op(traceparent=f"00-{TRACE}-{SPAN}-00"))
    assert pipeline.waiting == 0 and pipeline.export_spans() == (0, True) and not out
    assert pipeline.export_metrics() and len(out) == 1
    [metric] = out[0].resource_metrics[0].scope_metrics[0].metrics
    assert metric.name == "mcp.client.operation.duration" and metric.histogram.data_points[0].count == 1


def test_otlp_json_lines_write_ids_in_hex() -> None:
    import io
    import json

    out = io.StringIO()
    pipeline = Pipeline(OtlpJsonLines(out))
    pipeline.add(_op(traceparent=f"00-{TRACE}-{SPAN}-01"))
    assert pipeline.export_spans() == (1, True)
    span = json.loads(out.getvalue())["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["parentSpanId"], span["kind"]) == (TRACE, SPAN, 3)


def test_histogram_buckets_hold_their_upper_bound_and_counts_are_cumulative() -> None:
    clock = iter(range(1, 100))
    histograms = Histograms(clock=lambda: next(clock))
    for value in (BUCKETS[0], BUCKETS[0] + 1e-9, -1.0, BUCKETS[-1] * 2):
        histograms.operation("client", value, {"mcp.method.name": "ping"})
    request = histograms.request()
    assert request is not None
    [metric] = request.resource_metrics[0].scope_metrics[0].metrics
    [point] = metric.histogram.data_points
    assert metric.unit == "s" and metric.histogram.aggregation_temporality == 2  # cumulative
    assert list(point.explicit_bounds) == list(BUCKETS)
    assert point.bucket_counts[0] == 2  # the bound itself and the negative value (as 0)
    assert point.bucket_counts[1] == 1 and point.bucket_counts[-1] == 1 and point.count == 4
    assert (point.min, point.max, point.start_time_unix_nano) == (0.0, BUCKETS[-1] * 2, 1)
    histograms.operation("client", 0.0, {"mcp.method.name": "ping"})
    again = histograms.request()
    assert again is not None
    assert again.resource_metrics[0].scope_metrics[0].metrics[0].histogram.data_points[0].count == 5


def test_histogram_attribute_sets_are_bounded_by_an_overflow_point() -> None:
    histograms = Histograms()
    for i in range(CARDINALITY_LIMIT + 50):
        histograms.operation("server", 0.01, {"mcp.method.name": f"m{i}"})
    request = histograms.request()
    assert request is not None
    points = request.resource_metrics[0].scope_metrics[0].metrics[0].histogram.data_points
    assert len(points) == CARDINALITY_LIMIT + 1
    overflow = [p for p in points if attributes(p.attributes) == {"otel.metric.overflow": True}]
    assert len(overflow) == 1 and overflow[0].count == 50


def test_the_resource_takes_the_users_environment() -> None:
    attrs = resource_attributes({"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=a%20b,bad"})
    assert (attrs["service.name"], attrs["deployment.environment"], attrs["team"]) == (
        "mcptape",
        "prod",
        "a b",
    )
    assert "bad" not in attrs and attrs["service.instance.id"]
    named = resource_attributes({"OTEL_RESOURCE_ATTRIBUTES": "service.name=x", "OTEL_SERVICE_NAME": "gw"})
    assert named["service.name"] == "gw"
    assert resource_attributes({"OTEL_RESOURCE_ATTRIBUTES": "service.name=x"})["service.name"] == "x"


def test_otlp_headers_come_from_the_environment_percent_decoded() -> None:
    assert env_headers("api-key=a%3Db, x-team = t ,broken,=v") == {"api-key": "a=b", "x-team": "t"}
    assert env_headers(None) == {}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answers: ClassVar[list[tuple[int, dict[str, str]]]] = []
    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, dict(self.headers), body))
        status, headers = self.answers.pop(0) if self.answers else (200, {})
        self.send_response(status)
        for name, value in {"Content-Length": "0", **headers}.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_receiver() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"answers": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _request() -> ExportTraceServiceRequest:
    batch = SpanBatch()
    batch.add(_op())
    return batch.take()[0]


def test_otlp_http_posts_protobuf_with_the_environments_headers_gzipped(
    http_receiver: tuple[str, type[_Handler]],
) -> None:
    url, handler = http_receiver
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"}
    destination = OtlpHttp(url + "/v1/traces", environ=env)
    assert destination.spans(_request()) and destination.failure is None
    [(path, headers, body)] = handler.seen
    assert path == "/v1/traces" and headers["Content-Type"] == "application/x-protobuf"
    assert (headers["api-key"], headers["Content-Encoding"]) == ("secret", "gzip")
    assert len(_spans(ExportTraceServiceRequest.FromString(gzip.decompress(body)))) == 1
    destination.close()


def test_otlp_http_retries_what_the_receiver_says_to_retry_and_not_the_rest(
    http_receiver: tuple[str, type[_Handler]],
) -> None:
    url, handler = http_receiver
    handler.answers += [(503, {"Retry-After": "0"}), (429, {"Retry-After": "0"})]
    destination = OtlpHttp(url)
    assert destination.spans(_request()) and len(handler.seen) == 3
    handler.answers.append((400, {}))
    assert not destination.spans(_request()) and len(handler.seen) == 4  # not retried
    assert destination.failure == "HTTP 400 (POST /v1/traces)"
    destination.close()


def test_otlp_http_to_a_closed_port_fails_within_its_timeout() -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    destination = OtlpHttp(f"http://127.0.0.1:{port}", timeout=0.5)
    started = time.monotonic()
    assert not destination.metrics(_request())
    assert time.monotonic() - started < 1.5
    assert destination.failure is not None and "ConnectionRefused" in destination.failure


class _Refusing:
    """A destination that takes nothing, as a receiver that is down does after its retries."""

    where = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.failure: str | None = None
        self.calls: list[str] = []

    def spans(self, request: Any) -> bool:
        self.calls.append("spans")
        self.failure = "ConnectionRefusedError (POST /v1/traces)"
        return False

    def metrics(self, request: Any) -> bool:
        self.calls.append("metrics")
        return False

    def close(self) -> None:
        self.calls.append("close")


def test_an_export_ends_at_the_first_batch_the_receiver_does_not_take(tmp_path: Any) -> None:
    from mcptape.store import open_store
    from mcptape.store.queries import connect, resolve_session
    from mcptape.telemetry.recorded import export_session
    from mcptape.wire.frame import Frame

    db = str(tmp_path / "rec.db")
    store = open_store(db)
    sid = store.create_session(mode="record", name="many")
    writer = store.writer()
    for i in range(1, 301):  # three batches of 100 spans
        request = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}' % i
        writer.add_frame(sid, 2 * i - 1, Frame(request, "c2s", ts=1000.0 + i))
        writer.add_frame(
            sid, 2 * i, Frame(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i, "s2c", ts=1000.5 + i)
        )
    writer.close()
    refusing = _Refusing()
    try:
        with connect(store) as conn:
            row = resolve_session(conn, sid)
            assert row is not None
            _, ok = export_session(conn, row, refusing, batch=100)
    finally:
        store.close()
    # Each batch would have waited out its own retries against a receiver that is down.
    assert not ok and refusing.calls == ["spans", "close"]
    assert refusing.failure is not None and "/v1/traces" in refusing.failure
