"""CORS for the origins the user allows (``--allow-origin``): a page served there can use the gateway.

A browser asks before a request with headers of its own (``Authorization``,
``X-Mcptape-Token``, ``Mcp-Session-Id``, a JSON body): a preflight, ``OPTIONS`` with
``Access-Control-Request-Method``, which never carries credentials. From an allowed
origin it is answered without the gateway's token (the request that follows carries it
and is checked as any other), and every answer to that origin says it may be read
(``Access-Control-Allow-Origin``) and shows the headers an MCP client must read
(``Mcp-Session-Id``, ``MCP-Protocol-Version``, ``WWW-Authenticate``). Any other origin
was refused before this (403, :mod:`mcptape.gateway.security`); the gateway's own
origin is same-origin and needs none of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

METHODS = "GET, POST, DELETE, OPTIONS"
EXPOSE = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"
MAX_AGE_S = 600
_HEADER_NAMES = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:\s*,\s*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*")


def cors_origin(origin: str | None, allowed: Iterable[str]) -> str | None:
    """``origin`` when it is one the user allowed (``--allow-origin``): answers to it get CORS headers."""
    return origin if origin is not None and origin in set(allowed) else None


def is_preflight(method: str, headers: Mapping[str, str]) -> bool:
    return method == "OPTIONS" and "Access-Control-Request-Method" in headers


def preflight_headers(origin: str, headers: Mapping[str, str]) -> dict[str, str]:
    """The answer to a preflight from an allowed origin: what it may send, and for how long."""
    out = {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": METHODS,
        "Access-Control-Max-Age": str(MAX_AGE_S),
        "Vary": "Origin, Access-Control-Request-Headers",
    }
    requested = headers.get("Access-Control-Request-Headers", "").strip()
    if requested and _HEADER_NAMES.fullmatch(requested):
        out["Access-Control-Allow-Headers"] = requested
    if headers.get("Access-Control-Request-Private-Network") == "true":
        out["Access-Control-Allow-Private-Network"] = "true"  # a page on a public address asks
    return out


def answer_headers(origin: str) -> dict[str, str]:
    """The headers every answer to an allowed origin carries."""
    return {"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSE, "Vary": "Origin"}
