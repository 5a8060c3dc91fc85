"""Operations into OTLP spans: an ``ExportTraceServiceRequest`` built with opentelemetry-proto, a span at a time.

No OpenTelemetry SDK: a span of the SDK costs about 0.3 ms to make and as much to
encode, so a burst of traffic outran the exporter. A span here is one protobuf message
added to the batch's request: its scalars set once, its attributes merged in from a
serialized block kept per attribute set (a session's spans share all their attributes
but the request id and the resource URI: method, tool, mode, session id, transport),
those two added after it. Parsing serialized fields into a message is merging them
(protobuf's documented rule), so the library still does every encoding; the blocks
only spare it building the same key-values again for every span.

Ids: a span id, and a trace id for a span without a parent, are random bytes from
:func:`os.urandom` (taken a few kilobytes at a time). A request's
``params._meta.traceparent`` is the span's parent (:mod:`mcptape.telemetry.tracecontext`);
its sampled flag is respected: a caller that did not sample its trace gets no span from
mcptape. The span's ``flags`` say whether the parent was remote, as OpenTelemetry's
exporters write them.
"""

from __future__ import annotations

import os
from typing import Any, Final

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from mcptape.telemetry.conventions import Operation, span_attributes, span_name
from mcptape.telemetry.resource import any_value, key_values, resource, scope
from mcptape.telemetry.tracecontext import parent

KIND_SERVER: Final = Span.SpanKind.SPAN_KIND_SERVER
KIND_CLIENT: Final = Span.SpanKind.SPAN_KIND_CLIENT
STATUS_ERROR: Final = Status.StatusCode.STATUS_CODE_ERROR
# Span.flags: whether the parent's remoteness is known, and whether it is remote.
HAS_IS_REMOTE: Final = 0x100
IS_REMOTE: Final = 0x200
BLOCKS: Final = 4096  # serialized attribute sets kept; beyond, the cache starts over
# The span attributes that differ from one request to the next: added to each span
# after the serialized block of the others (which many spans share).
PER_REQUEST: Final = ("jsonrpc.request.id", "mcp.resource.uri")
_RANDOM_CHUNK: Final = 4096
_ZERO_SPAN: Final = bytes(8)
_ZERO_TRACE: Final = bytes(16)


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class RandomIds:
    """Span and trace ids: random bytes from the OS, fetched a chunk at a time (never all zero)."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def _take(self, n: int, zero: bytes) -> bytes:
        while True:
            if self._at + n > len(self._pool):
                self._pool, self._at = os.urandom(_RANDOM_CHUNK), 0
            out = self._pool[self._at : self._at + n]
            self._at += n
            if out != zero:
                return out

    def span_id(self) -> bytes:
        return self._take(8, _ZERO_SPAN)

    def trace_id(self) -> bytes:
        return self._take(16, _ZERO_TRACE)


class SpanBatch:
    """The spans made since the last :meth:`take`, in one export request.

    Not thread-safe: one thread (the sink's, or ``export``'s) owns a batch.
    """

    def __init__(self, res: Resource | None = None) -> None:
        self._resource = res if res is not None else resource()
        self._scope = scope()
        self._ids = RandomIds()
        self._blocks: dict[tuple[tuple[str, Any], ...], bytes] = {}
        self.count = 0
        self._new()

    def _new(self) -> None:
        self.request = ExportTraceServiceRequest()
        resource_spans = self.request.resource_spans.add()
        resource_spans.resource.CopyFrom(self._resource)
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.CopyFrom(self._scope)
        self._spans = scope_spans.spans
        self.count = 0

    def _block(self, attrs: dict[str, Any]) -> bytes:
        """The serialized ``attributes`` fields of a span holding these key-values."""
        try:
            key = tuple(attrs.items())
            found = self._blocks.get(key)
        except TypeError:  # an unhashable value: encode it each time
            return Span(attributes=key_values(attrs)).SerializeToString()
        if found is None:
            found = Span(attributes=key_values(attrs)).SerializeToString()
            if len(self._blocks) >= BLOCKS:
                self._blocks.clear()  # a peer inventing tool names: keep the cache bounded
            self._blocks[key] = found
        return found

    def add(self, op: Operation, attrs: dict[str, Any] | None = None) -> bool:
        """The operation's span, added to the batch; False when its caller's trace is not sampled.
        ``attrs``: its attributes, when the caller has them (:func:`conventions.attributes`)."""
        caller = parent(op.traceparent, op.tracestate) if op.traceparent is not None else None
        if caller is not None and not caller.sampled:
            return False
        attrs = dict(span_attributes(op) if attrs is None else attrs)
        own = [(key, attrs.pop(key)) for key in PER_REQUEST if key in attrs]
        ids = self._ids
        # Every scalar in the one call: each attribute set apart costs a call into protobuf.
        if caller is None:
            span = self._spans.add(
                trace_id=ids.trace_id(),
                span_id=ids.span_id(),
                flags=HAS_IS_REMOTE,
                name=span_name(op),
                kind=KIND_SERVER if op.role == "server" else KIND_CLIENT,
                start_time_unix_nano=_ns(op.start),
                end_time_unix_nano=_ns(op.end),
            )
        else:
            span = self._spans.add(
                trace_id=caller.trace_id,
                span_id=ids.span_id(),
                parent_span_id=caller.span_id,
                flags=HAS_IS_REMOTE | IS_REMOTE,
                trace_state=caller.tracestate,
                name=span_name(op),
                kind=KIND_SERVER if op.role == "server" else KIND_CLIENT,
                start_time_unix_nano=_ns(op.start),
                end_time_unix_nano=_ns(op.end),
            )
        span.MergeFromString(self._block(attrs))
        for key, value in own:
            if type(value) is str:
                span.attributes.add(key=key).value.string_value = value
            else:
                span.attributes.add(key=key, value=any_value(value))
        status = span.status
        if op.error_type is not None:
            status.code = STATUS_ERROR
            if op.error_message:
                status.message = op.error_message
        else:
            status.SetInParent()  # UNSET, written as OpenTelemetry's exporters write it
        self.count += 1
        return True

    def take(self) -> tuple[ExportTraceServiceRequest, int]:
        """The request holding every span added since the last take, and how many; a new batch begins."""
        request, count = self.request, self.count
        self._new()
        return request, count
