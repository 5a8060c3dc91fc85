"""The MCP duration histograms, kept by mcptape: explicit buckets, cumulative, exported as OTLP metrics.

``mcp.{client,server}.operation.duration`` and ``mcp.{client,server}.session.duration``
(seconds) with the bucket boundaries the conventions advise
(:data:`~mcptape.telemetry.conventions.BUCKETS`). A point per attribute set, its
counts cumulative since the first measurement of that set (the temporality every OTLP
backend takes). A bucket holds the values up to and including its upper bound, as the
OpenTelemetry specification defines them.

Attribute sets are bounded per instrument (:data:`CARDINALITY_LIMIT`, the SDKs'
default): a peer that invents a method name per request gets one more point, the
overflow point (``otel.metric.overflow``), not unbounded memory.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from mcptape.telemetry.conventions import BUCKETS, OPERATION_METRICS, SESSION_METRICS
from mcptape.telemetry.resource import key_values, resource, scope

CARDINALITY_LIMIT: Final = 2000
OVERFLOW: Final = (("otel.metric.overflow", True),)
CUMULATIVE: Final = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE


@dataclass(slots=True)
class Point:
    """One attribute set's measurements so far."""

    start_ns: int
    count: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))

    def record(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        self.buckets[bisect_left(BUCKETS, value)] += 1


class Instrument:
    """One histogram: its points by attribute set."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description
        self.points: dict[tuple[tuple[str, Any], ...], Point] = {}

    def record(self, value: float, attributes: dict[str, Any], now_ns: int) -> None:
        key = tuple(attributes.items())
        point = self.points.get(key)
        if point is None:
            if len(self.points) >= CARDINALITY_LIMIT:
                key = OVERFLOW
                point = self.points.get(key)
            if point is None:
                point = self.points[key] = Point(now_ns)
        point.record(value if value >= 0.0 else 0.0)

    def metric(self, now_ns: int) -> Metric:
        return Metric(
            name=self.name,
            description=self.description,
            unit="s",
            histogram=Histogram(
                aggregation_temporality=CUMULATIVE,
                data_points=[
                    HistogramDataPoint(
                        attributes=key_values(dict(key)),
                        start_time_unix_nano=point.start_ns,
                        time_unix_nano=now_ns,
                        count=point.count,
                        sum=point.total,
                        min=point.low,
                        max=point.high,
                        bucket_counts=point.buckets,
                        explicit_bounds=BUCKETS,
                    )
                    for key, point in self.points.items()
                ],
            ),
        )


def _instruments(names: dict[str, str], what: str) -> dict[str, Instrument]:
    return {
        role: Instrument(name, f"The duration of an MCP {what} as mcptape saw it, as the {role}.")
        for role, name in names.items()
    }


class Histograms:
    """The four duration histograms of a process (or of one ``export``)."""

    def __init__(self, res: Resource | None = None, clock: Callable[[], int] = time.time_ns) -> None:
        self._resource = res if res is not None else resource()
        self._clock = clock
        self.operations = _instruments(OPERATION_METRICS, "request")
        self.sessions = _instruments(SESSION_METRICS, "session")
        self.recorded = False

    def operation(self, role: str, seconds: float, attributes: dict[str, Any]) -> None:
        self.operations[role].record(seconds, attributes, self._clock())
        self.recorded = True

    def session(self, role: str, seconds: float, attributes: dict[str, Any]) -> None:
        self.sessions[role].record(seconds, attributes, self._clock())
        self.recorded = True

    def request(self) -> ExportMetricsServiceRequest | None:
        """Every histogram with a point, as one export request (None: nothing was recorded)."""
        now = self._clock()
        metrics = [
            instrument.metric(now)
            for instrument in (*self.operations.values(), *self.sessions.values())
            if instrument.points
        ]
        if not metrics:
            return None
        return ExportMetricsServiceRequest(
            resource_metrics=[
                ResourceMetrics(
                    resource=self._resource, scope_metrics=[ScopeMetrics(scope=scope(), metrics=metrics)]
                )
            ]
        )
