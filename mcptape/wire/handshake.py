"""Who is talking: client and server identity, protocol version and capabilities from the frames.

Up to 2025-11-25 they come from the ``initialize`` exchange. From 2026-07-28 there is no
handshake: every request carries them in ``params._meta`` under ``io.modelcontextprotocol/``
keys, ``server/discover`` answers with capabilities, and results carry the server's
info in their ``_meta``. These functions turn a parsed message into ``sessions`` columns.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcptape.wire.protocol import DISCOVER, HELLO_METHODS, INITIALIZE, META_PREFIX

__all__ = ["HELLO_METHODS", "client_hello", "server_hello"]


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _info_columns(prefix: str, info: Any) -> dict[str, Any]:
    if not isinstance(info, dict):
        return {}
    return {
        f"{prefix}_name": info.get("name"),
        f"{prefix}_version": info.get("version"),
        f"{prefix}_info": _json(info),
    }


def _meta(container: Any) -> dict[str, Any]:
    if isinstance(container, dict):
        meta = container.get("_meta")
        if isinstance(meta, dict):
            return meta
    return {}


def client_hello(msg: Any) -> dict[str, Any]:
    """Session columns learnt from a client's request (``initialize`` or a 2026 request's ``_meta``)."""
    if not isinstance(msg, dict):
        return {}
    params = msg.get("params")
    if not isinstance(params, dict):
        return {}
    out: dict[str, Any] = {}
    if msg.get("method") == INITIALIZE:
        out.update(_info_columns("client", params.get("clientInfo")))
        if "capabilities" in params:
            out["client_capabilities"] = _json(params.get("capabilities"))
        if isinstance(params.get("protocolVersion"), str):
            out["protocol_version"] = params["protocolVersion"]
        return out
    meta = _meta(params)
    if META_PREFIX + "clientInfo" in meta:
        out.update(_info_columns("client", meta[META_PREFIX + "clientInfo"]))
    if META_PREFIX + "clientCapabilities" in meta:
        out["client_capabilities"] = _json(meta[META_PREFIX + "clientCapabilities"])
    if isinstance(meta.get(META_PREFIX + "protocolVersion"), str):
        out["protocol_version"] = meta[META_PREFIX + "protocolVersion"]
    return out


def server_hello(msg: Any, request_method: str | None) -> dict[str, Any]:
    """Session columns learnt from a server's result (to ``initialize``, ``server/discover`` or any 2026 request)."""
    if not isinstance(msg, dict):
        return {}
    result = msg.get("result")
    if not isinstance(result, dict):
        return {}
    out: dict[str, Any] = {}
    if request_method == INITIALIZE:
        out.update(_info_columns("server", result.get("serverInfo")))
        if "capabilities" in result:
            out["server_capabilities"] = _json(result.get("capabilities"))
        if isinstance(result.get("protocolVersion"), str):
            out["protocol_version"] = result["protocolVersion"]
        return out
    if request_method == DISCOVER and "capabilities" in result:
        out["server_capabilities"] = _json(result.get("capabilities"))
    meta = _meta(result)
    if META_PREFIX + "serverInfo" in meta:
        out.update(_info_columns("server", meta[META_PREFIX + "serverInfo"]))
    return out
