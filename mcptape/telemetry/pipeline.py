"""Operations into OpenTelemetry spans and histograms, exported over OTLP/HTTP or as OTLP JSON lines.

The one module that imports OpenTelemetry (``mcptape[otel]``): the SDK makes the spans
(trace and span ids, sampling, the parent taken from a W3C ``traceparent``) and the
histograms; its OTLP/HTTP exporters or its protobuf encoders put them on the wire. Not
the SDK's batch processor: the caller (the exporter's thread, or ``export``) is the
batch, so one thread owns every export and its bounds.

A span's parent is the ``traceparent``/``tracestate`` the request carried in
``params._meta`` (the conventions' context propagation): mcptape forwards the request
unchanged, so the server continues the same parent, and the client's span, mcptape's
and the server's are one trace. The parent's sampled flag is respected (the SDK's
default sampler): a caller that did not sample its trace gets no span from mcptape.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Sequence
from typing import IO, Any, Protocol

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcptape.telemetry.conventions import (
    BUCKETS,
    OPERATION_METRICS,
    SESSION_METRICS,
    Operation,
    SessionFacts,
    metric_attributes,
    session_metric_attributes,
    span_attributes,
    span_name,
)

SCOPE = "mcptape"
_PROPAGATOR = TraceContextTextMapPropagator()
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


class ExportLog(logging.Handler):
    """Keeps the OpenTelemetry exporters' last complaint instead of printing it: mcptape
    says one line of its own (a client's stderr is no place for retry warnings)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage()
        except Exception:  # a malformed log call must not reach the exporter's caller
            self.last = record.msg if isinstance(record.msg, str) else None


EXPORT_LOG = ExportLog()
_otel_logger = logging.getLogger("opentelemetry")
_otel_logger.addHandler(EXPORT_LOG)
_otel_logger.propagate = False


class Destination(Protocol):
    """Where spans and metrics go; each call returns whether they got there."""

    where: str

    def spans(self, spans: Sequence[ReadableSpan]) -> bool: ...

    def metrics(self, data: MetricsData) -> bool: ...

    def close(self) -> None: ...


def endpoints(url: str) -> tuple[str, str]:
    """The traces and metrics endpoints of an OTLP/HTTP receiver given as its base URL
    (``http://localhost:4318``) or as its traces endpoint (``…/v1/traces``)."""
    base = url.rstrip("/")
    for suffix in ("/v1/traces", "/v1/metrics"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return f"{base}/v1/traces", f"{base}/v1/metrics"


class OtlpHttp:
    """An OTLP/HTTP receiver (protobuf), through OpenTelemetry's own exporters."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics.export import MetricExportResult
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.where = url
        traces, metrics = endpoints(url)
        self._spans = OTLPSpanExporter(endpoint=traces, timeout=timeout)
        self._metrics = OTLPMetricExporter(endpoint=metrics, timeout=timeout)
        self._span_ok = SpanExportResult.SUCCESS
        self._metric_ok = MetricExportResult.SUCCESS

    def spans(self, spans: Sequence[ReadableSpan]) -> bool:
        return bool(self._spans.export(spans) == self._span_ok)

    def metrics(self, data: MetricsData) -> bool:
        return bool(self._metrics.export(data) == self._metric_ok)

    def close(self) -> None:
        self._spans.shutdown()
        self._metrics.shutdown()


def otlp_json(message: Any) -> dict[str, Any]:
    """A protobuf export request as OTLP JSON: lowerCamelCase keys, enums as integers,
    trace and span ids in hex (not protobuf JSON's base64), as OTLP/HTTP JSON and the
    collector's file exporter write it."""
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(doc)
    return doc


def _hex_ids(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)


class OtlpJsonLines:
    """OTLP JSON lines (the collector's file exporter format): one export request a line."""

    def __init__(self, out: IO[str], where: str = "-") -> None:
        self.out = out
        self.where = where

    def _write(self, message: Any) -> bool:
        self.out.write(json.dumps(otlp_json(message), separators=(",", ":")) + "\n")
        return True

    def spans(self, spans: Sequence[ReadableSpan]) -> bool:
        return self._write(encode_spans(spans))

    def metrics(self, data: MetricsData) -> bool:
        return self._write(encode_metrics(data))

    def close(self) -> None:
        self.out.flush()


class _Collect(SpanProcessor):
    """Keeps ended spans until the pipeline exports them."""

    def __init__(self) -> None:
        self.ended: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def _resource() -> Resource:
    from mcptape import __version__

    attrs: dict[str, Any] = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME"):  # the user's name for this service wins
        attrs["service.name"] = "mcptape"
    return Resource.create(attrs)


def _histograms(meter: Any, names: dict[str, str], what: str) -> dict[str, Any]:
    """One histogram (seconds, the conventions' buckets) per role."""
    return {
        role: meter.create_histogram(
            name,
            unit="s",
            description=f"The duration of an MCP {what} as mcptape saw it, as the {role}.",
            explicit_bucket_boundaries_advisory=BUCKETS,
        )
        for role, name in names.items()
    }


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class Pipeline:
    """Makes spans and histogram points of operations; exports them to ``destination`` on request."""

    def __init__(self, destination: Destination) -> None:
        from mcptape import __version__

        self.destination = destination
        resource = _resource()
        self._collect = _Collect()
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(self._collect)
        self.tracer = self.tracer_provider.get_tracer(SCOPE, __version__)
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=[self.reader], shutdown_on_exit=False
        )
        meter = self.meter_provider.get_meter(SCOPE, __version__)
        self._operations = _histograms(meter, OPERATION_METRICS, "request")
        self._sessions = _histograms(meter, SESSION_METRICS, "session")
        self.metrics_recorded = False

    @property
    def waiting(self) -> int:
        """Spans made and not exported yet."""
        return len(self._collect.ended)

    @staticmethod
    def parent(op: Operation) -> Context | None:
        """The remote parent named by the operation's ``traceparent`` (None: a new trace)."""
        if op.traceparent is None:
            return None
        carrier = {"traceparent": op.traceparent}
        if op.tracestate is not None:
            carrier["tracestate"] = op.tracestate
        return _PROPAGATOR.extract(carrier)

    def add(self, op: Operation) -> None:
        """One span for the operation, and its duration in the role's histogram."""
        span = self.tracer.start_span(
            span_name(op),
            context=self.parent(op),
            kind=SpanKind.SERVER if op.role == "server" else SpanKind.CLIENT,
            attributes=span_attributes(op),
            start_time=_ns(op.start),
        )
        if op.error_type is not None:
            span.set_status(Status(StatusCode.ERROR, op.error_message))
        span.end(end_time=_ns(op.end))
        if not op.notification:
            self._operations[op.role].record(max(op.end - op.start, 0.0), metric_attributes(op))
            self.metrics_recorded = True

    def add_session(self, session: SessionFacts, duration: float, status: str | None) -> None:
        """A session's duration in its histogram."""
        role = "server" if session.mode == "serve" else "client"
        self._sessions[role].record(max(duration, 0.0), session_metric_attributes(session, status))
        self.metrics_recorded = True

    def export_spans(self) -> tuple[int, bool]:
        """Export the spans made so far; how many, and whether the destination took them."""
        spans, self._collect.ended = self._collect.ended, []
        if not spans:
            return 0, True
        return len(spans), self.destination.spans(spans)

    def export_metrics(self) -> bool:
        """Export the histograms (cumulative) if anything was recorded."""
        if not self.metrics_recorded:
            return True
        data = self.reader.get_metrics_data()
        if data is None or not data.resource_metrics:
            return True
        return self.destination.metrics(data)

    def close(self) -> None:
        self.destination.close()
