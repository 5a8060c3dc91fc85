"""An OTLP/HTTP receiver for tests: aiohttp on loopback, in process, decoding with opentelemetry-proto.

It keeps every span and metric it was sent, decoded from the protobuf bodies the
exporters post to ``/v1/traces`` and ``/v1/metrics``. ``hang=True`` makes a receiver
that never answers (until it is closed): an exporter's worst peer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def value_of(value: AnyValue) -> Any:
    """An OTLP attribute value as a Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP key-values as a dict."""
    return {kv.key: value_of(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


@dataclass
class Received:
    """One span as the receiver decoded it, with its resource's and scope's facts."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    resource: dict[str, Any]
    scope: str


@dataclass
class OtlpReceiver:
    """``await receiver.start()`` gives its base URL; ``spans`` and ``metrics`` fill as exports arrive."""

    hang: bool = False
    spans: list[Received] = field(default_factory=list)
    metrics: list[Any] = field(default_factory=list)  # opentelemetry.proto Metric messages
    requests: int = 0
    _server: TestServer | None = None
    _release: asyncio.Event | None = None

    async def _traces(self, request: web.Request) -> web.Response:
        self.requests += 1
        body = await request.read()
        if self.hang:
            assert self._release is not None
            await self._release.wait()
        message = ExportTraceServiceRequest.FromString(body)
        for rs in message.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    self.spans.append(
                        Received(
                            s.name,
                            s.kind,
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            attributes(s.attributes),
                            s.status.code,
                            s.status.message,
                            resource,
                            ss.scope.name,
                        )
                    )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        self.requests += 1
        body = await request.read()
        if self.hang:
            assert self._release is not None
            await self._release.wait()
        message = ExportMetricsServiceRequest.FromString(body)
        for rm in message.resource_metrics:
            for sm in rm.scope_metrics:
                self.metrics.extend(sm.metrics)
        return web.Response(
            body=ExportMetricsServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    async def start(self) -> str:
        self._release = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_post("/v1/metrics", self._metrics)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        return f"http://127.0.0.1:{self._server.port}"

    async def close(self) -> None:
        if self._release is not None:
            self._release.set()
        if self._server is not None:
            await self._server.close()

    def named(self, name: str) -> list[Received]:
        return [s for s in self.spans if s.name == name]

    def histogram(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """The latest data points of histogram ``name``: (attributes, point) pairs."""
        found = [m for m in self.metrics if m.name == name]
        if not found:
            return []
        return [(attributes(p.attributes), p) for p in found[-1].histogram.data_points]
