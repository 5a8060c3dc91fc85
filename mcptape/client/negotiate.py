"""Negotiation: the 2025 ``initialize`` handshake or the 2026-07-28 ``server/discover``.

``auto`` (the default) does what the SDKs do: probe ``server/discover`` at the newest
modern revision; a server that answers it with a modern version in ``supportedVersions``
is spoken to in that revision (every request then carries the protocol version, the
client's info and capabilities in ``params._meta``); any JSON-RPC error (or an HTTP 4xx
other than 401/403, which older streamable HTTP servers answer a first request that is
not ``initialize`` with) means an older server, which gets ``initialize`` and
``notifications/initialized``. A forced
``--protocol-version`` skips the probe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptape import __version__
from mcptape.client.core import ClientCore
from mcptape.client.errors import ApplicationError, HttpError, ProtocolError, ValidationError
from mcptape.wire.protocol import (
    DISCOVER,
    HANDSHAKE_REVISIONS,
    INITIALIZE,
    INITIALIZED,
    LATEST_HANDSHAKE,
    MODERN_REVISIONS,
)

# Newest first: what a client offers, in the order it prefers.
MODERN_VERSIONS = tuple(reversed(MODERN_REVISIONS))
HANDSHAKE_VERSIONS = tuple(reversed(HANDSHAKE_REVISIONS))
KNOWN_VERSIONS = MODERN_VERSIONS + HANDSHAKE_VERSIONS
META = "io.modelcontextprotocol/"
CLIENT_INFO = {"name": "mcptape", "version": __version__}


@dataclass
class ServerHello:
    """What negotiation learnt: the revision spoken, who the server is and what it offers."""

    protocol_version: str
    via: str  # INITIALIZE or DISCOVER (wire/protocol.py)
    server_info: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    raw: Any = None

    def as_dict(self) -> dict[str, Any]:
        """``server/info``'s output."""
        out: dict[str, Any] = {
            "protocolVersion": self.protocol_version,
            "negotiatedWith": self.via,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
        }
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out


def modern_meta(version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries."""
    return {
        META + "protocolVersion": version,
        META + "clientInfo": CLIENT_INFO,
        META + "clientCapabilities": capabilities,
    }


async def negotiate(
    core: ClientCore, capabilities: dict[str, Any], version: str | None = None
) -> ServerHello:
    """Open the MCP session on ``core`` (see the module docstring); raises ClientError."""
    if version is not None and version in MODERN_VERSIONS:
        return await _discover(core, capabilities, version)
    if version is None:
        try:
            return await _discover(core, capabilities, MODERN_VERSIONS[0])
        except (ApplicationError, ProtocolError, HttpError) as exc:
            if isinstance(exc, ProtocolError) and exc.code is None:
                raise
            # An older streamable HTTP server refuses a first POST that is not initialize.
            if isinstance(exc, HttpError) and (
                exc.status is None or exc.status in (401, 403) or exc.status >= 500
            ):
                raise
            core.meta = None  # an older server: the handshake
    return await _initialize(core, capabilities, version or LATEST_HANDSHAKE)


async def _discover(core: ClientCore, capabilities: dict[str, Any], version: str) -> ServerHello:
    core.meta = modern_meta(version, capabilities)
    result = await core.request(DISCOVER, limit=core.timeouts.connect)
    if not isinstance(result, dict):
        raise ProtocolError(f"server/discover answered {result!r}, not an object")
    supported = result.get("supportedVersions")
    if not isinstance(supported, list) or version not in supported:
        # Speaks discover but not our revision: treat like an error, so auto falls back.
        raise ProtocolError(
            f"the server supports protocol versions {supported!r}, not {version}", code=-32022, data=result
        )
    meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
    info = meta.get(META + "serverInfo") if isinstance(meta, dict) else None
    return ServerHello(
        version,
        DISCOVER,
        info if isinstance(info, dict) else {},
        _object(result.get("capabilities")),
        result.get("instructions") if isinstance(result.get("instructions"), str) else None,
        result,
    )


async def _initialize(core: ClientCore, capabilities: dict[str, Any], version: str) -> ServerHello:
    result = await core.request(
        INITIALIZE,
        {"protocolVersion": version, "capabilities": capabilities, "clientInfo": CLIENT_INFO},
        limit=core.timeouts.connect,
    )
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise ProtocolError(f"initialize answered without a protocolVersion: {result!r}")
    await core.notify(INITIALIZED)
    return ServerHello(
        result["protocolVersion"],
        INITIALIZE,
        _object(result.get("serverInfo")),
        _object(result.get("capabilities")),
        result.get("instructions") if isinstance(result.get("instructions"), str) else None,
        result,
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def check_version(version: str | None) -> str | None:
    """A ``--protocol-version`` value, or a ClientError naming the known ones."""
    if version is None or version == "auto":
        return None
    if version not in KNOWN_VERSIONS:
        raise ValidationError(
            f"unknown protocol version {version!r}; known: auto, {', '.join(KNOWN_VERSIONS)}"
        )
    return version
