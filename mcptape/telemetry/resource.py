"""Who sends the telemetry: the OTLP resource and instrumentation scope of every export, and attribute values.

The resource is mcptape (``service.name``, ``service.version``, ``service.instance.id``
for this process, the ``telemetry.sdk.*`` that name what made the data) with what the user set in the
environment, as every OpenTelemetry SDK reads it: ``OTEL_RESOURCE_ATTRIBUTES``
(``key=value`` pairs, comma-separated, values percent-decoded) and
``OTEL_SERVICE_NAME``, which win over mcptape's own name.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

SCOPE: Final = "mcptape"
INSTANCE: Final = str(uuid.uuid4())  # service.instance.id: this process, as the SDKs name it


def any_value(value: Any) -> AnyValue:
    """An attribute value as OTLP carries it (bool before int: a bool is an int in Python)."""
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    """Attributes as OTLP key-values, in their order."""
    return [KeyValue(key=key, value=any_value(value)) for key, value in attributes.items()]


def environment_attributes(environ: Mapping[str, str]) -> dict[str, str]:
    """The resource attributes the user set: ``OTEL_RESOURCE_ATTRIBUTES``, then ``OTEL_SERVICE_NAME``."""
    out: dict[str, str] = {}
    for item in environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():  # a malformed pair is skipped, as the SDKs do
            out[key.strip()] = unquote(value.strip())
    service = environ.get("OTEL_SERVICE_NAME")
    if service:
        out["service.name"] = service
    return out


def resource_attributes(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """mcptape's resource attributes, the user's from the environment winning over the name."""
    from mcptape import __version__

    attrs: dict[str, Any] = {
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": SCOPE,
        "telemetry.sdk.version": __version__,
        "service.instance.id": INSTANCE,
        "service.name": SCOPE,
    }
    attrs.update(environment_attributes(os.environ if environ is None else environ))
    attrs["service.version"] = __version__
    return attrs


def resource(environ: Mapping[str, str] | None = None) -> Resource:
    """The OTLP resource of every export of this process."""
    return Resource(attributes=key_values(resource_attributes(environ)))


def scope() -> InstrumentationScope:
    """The instrumentation scope: mcptape at its version."""
    from mcptape import __version__

    return InstrumentationScope(name=SCOPE, version=__version__)
