"""OpenTelemetry for MCP traffic: one span per exchange and the duration metrics, live or from a recording.

The pieces, from the frames to the wire:

- :mod:`~mcptape.telemetry.facts` reads what a span needs from one JSON-RPC message
  (tool, prompt, resource, ``_meta.traceparent``, error code), large frames included,
  without building their values;
- :mod:`~mcptape.telemetry.conventions` is an :class:`Operation` (a request with its
  reply, or a notification) and the attributes, span name and kind the MCP semantic
  conventions give it;
- :mod:`~mcptape.telemetry.pairing` pairs the frames of a live session into operations
  (by direction and id), on the exporter's thread;
- :mod:`~mcptape.telemetry.sink` is the bounded queue and the thread behind
  ``--otlp URL`` (the :class:`~mcptape.proxy.addons.otlp.OtlpExporter` addon feeds it);
- :mod:`~mcptape.telemetry.pipeline` turns operations into spans
  (:mod:`~mcptape.telemetry.spans`, their parent from
  :mod:`~mcptape.telemetry.tracecontext`) and histograms
  (:mod:`~mcptape.telemetry.histograms`), OTLP protobuf messages with
  :mod:`~mcptape.telemetry.resource`, and exports them (OTLP/HTTP,
  :mod:`~mcptape.telemetry.otlp_http`, or OTLP JSON lines to a file);
- :mod:`~mcptape.telemetry.recorded` does the same from a recording (``mcptape export
  --format otlp``).

OpenTelemetry's protobuf messages (``opentelemetry-proto``, the optional extra
``mcptape[otel]``) are imported by ``pipeline`` and the modules it loads, only on the
exporter's thread or in ``export``: ``mcptape --help`` and a session without ``--otlp``
never load them. The OpenTelemetry SDK is not used: its spans cost too much for a burst.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = "pip install 'mcptape[otel]'"


def missing_packages() -> str | None:
    """None when opentelemetry-proto is installed, else a one-line sentence saying what to do."""
    for module in ("opentelemetry.proto", "google.protobuf"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package is missing (or blocked)
            found = False
        if not found:
            return f"OpenTelemetry export needs the optional packages of mcptape[otel] ({module} is missing): {INSTALL_HINT}"
    return None
