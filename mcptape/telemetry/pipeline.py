"""Operations into OTLP spans and histograms, exported over OTLP/HTTP or written as OTLP JSON lines.

The spans (:mod:`~mcptape.telemetry.spans`) and the histograms
(:mod:`~mcptape.telemetry.histograms`) are protobuf messages of opentelemetry-proto
(``mcptape[otel]``), built by mcptape without the OpenTelemetry SDK; a
:class:`Destination` takes the export requests: a receiver over OTLP/HTTP
(:class:`~mcptape.telemetry.otlp_http.OtlpHttp`) or a file of OTLP JSON lines
(:class:`OtlpJsonLines`, the Collector's file-exporter format). The caller (the
exporter's thread, or ``export``) is the batch, so one thread owns every export and
its bounds. ``--otlp`` and ``export --format otlp`` go through this same pipeline.
"""

from __future__ import annotations

import base64
import json
from typing import IO, Any, Protocol

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from mcptape.telemetry.conventions import Operation, SessionFacts, attributes, session_metric_attributes
from mcptape.telemetry.histograms import Histograms
from mcptape.telemetry.otlp_http import OtlpHttp, endpoints
from mcptape.telemetry.resource import resource
from mcptape.telemetry.spans import SpanBatch

__all__ = ["Destination", "OtlpHttp", "OtlpJsonLines", "Pipeline", "endpoints", "otlp_json"]

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


class Destination(Protocol):
    """Where export requests go; each call returns whether they got there (``failure`` says why not)."""

    where: str
    failure: str | None

    def spans(self, request: ExportTraceServiceRequest) -> bool: ...

    def metrics(self, request: ExportMetricsServiceRequest) -> bool: ...

    def close(self) -> None: ...


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
        self.failure: str | None = None

    def _write(self, message: Any) -> bool:
        self.out.write(json.dumps(otlp_json(message), separators=(",", ":")) + "\n")
        return True

    def spans(self, request: ExportTraceServiceRequest) -> bool:
        return self._write(request)

    def metrics(self, request: ExportMetricsServiceRequest) -> bool:
        return self._write(request)

    def close(self) -> None:
        self.out.flush()


class Pipeline:
    """Makes spans and histogram points of operations; exports them to ``destination`` on request."""

    def __init__(self, destination: Destination) -> None:
        self.destination = destination
        res = resource()
        self._spans = SpanBatch(res)
        self._histograms = Histograms(res)

    @property
    def waiting(self) -> int:
        """Spans made and not exported yet."""
        return self._spans.count

    def add(self, op: Operation) -> None:
        """One span for the operation (unless its caller did not sample its trace), and its
        duration in the role's histogram (a notification has none: nothing acknowledges it)."""
        span_attrs, metric_attrs = attributes(op)
        self._spans.add(op, span_attrs)
        if not op.notification:
            self._histograms.operation(op.role, op.end - op.start, metric_attrs)

    def add_session(self, session: SessionFacts, duration: float, status: str | None) -> None:
        """A session's duration in its histogram."""
        role = "server" if session.mode == "serve" else "client"
        self._histograms.session(role, duration, session_metric_attributes(session, status))

    def export_spans(self) -> tuple[int, bool]:
        """Export the spans made so far; how many, and whether the destination took them."""
        if not self._spans.count:
            return 0, True
        request, count = self._spans.take()
        return count, self.destination.spans(request)

    def export_metrics(self) -> bool:
        """Export the histograms (cumulative) if anything was recorded."""
        request = self._histograms.request() if self._histograms.recorded else None
        if request is None:
            return True
        return self.destination.metrics(request)

    def close(self) -> None:
        self.destination.close()
