"""HTTP headers: which matter to MCP, which never cross a proxy, `--header` flags, `${ENV}` (pure).

Streamable HTTP carries protocol state in headers (``Mcp-Session-Id``,
``MCP-Protocol-Version``, ``Last-Event-ID``, and from 2026-07-28 ``Mcp-Method`` and
``Mcp-Name``) beside the credentials (``Authorization``, ``WWW-Authenticate``). Those are
what is recorded with each frame, credentials redacted; hop-by-hop headers are dropped
when a request or response is forwarded (RFC 9110 §7.6.1).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping

from mcptape.redact import is_secret_header

SESSION_ID = "Mcp-Session-Id"
PROTOCOL_VERSION = "MCP-Protocol-Version"
LAST_EVENT_ID = "Last-Event-ID"
MCP_METHOD = "Mcp-Method"
MCP_NAME = "Mcp-Name"
ACCEPT_BOTH = "application/json, text/event-stream"

# What is recorded in a frame's metadata (then redacted).
MATTERS = frozenset(
    h.lower()
    for h in (
        SESSION_ID,
        PROTOCOL_VERSION,
        LAST_EVENT_ID,
        MCP_METHOD,
        MCP_NAME,
        "Authorization",
        "WWW-Authenticate",
        "Content-Type",
        "Cookie",
        "Set-Cookie",
    )
)

# RFC 9110 §7.6.1, plus what aiohttp computes itself for a re-sent body.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)

# From 2026-07-28 a request names its method (and tool, prompt or resource) in headers.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_SAFE = re.compile(r"[\x20-\x7e]*")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class HeaderError(ValueError):
    """A `--header` flag or a config header the user must fix (one line)."""


_TOKEN_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def check_header(name: str, value: str) -> None:
    """HeaderError unless ``name: value`` can be sent as it is: a line break or NUL in a
    value (from a config file, a flag or an environment variable) would end the header
    early and inject others, and the HTTP client refuses it with a traceback."""
    if not _TOKEN_NAME.fullmatch(name):
        raise HeaderError(f"header name {name!r} is not a valid HTTP header name")
    if any(ch in value for ch in "\r\n\0"):
        raise HeaderError(f"header {name!r} has a line break or NUL in its value; not sent")


def parse_header_flag(text: str) -> tuple[str, str]:
    """``'K: V'`` as a (name, value) pair; HeaderError for anything else."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name or not _TOKEN_NAME.fullmatch(name):
        raise HeaderError(f"--header {text!r} is not 'Name: value' (for example --header 'X-Team: a')")
    check_header(name, value.strip())
    return name, value.strip()


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${NAME}`` with the environment variable's value; HeaderError if it is unset."""
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in env:
            raise HeaderError(
                f"header value uses ${{{m.group(1)}}}, but that environment variable is not set"
            )
        return env[m.group(1)]

    expanded = _ENV.sub(one, value)
    if expanded != value and any(ch in expanded for ch in "\r\n\0"):
        raise HeaderError("a header value's ${...} holds a line break or NUL; not sent")
    return expanded


def expand_headers(
    headers: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A config entry's headers with ``${ENV}`` expanded in every value (each checked)."""
    out = {name: expand_env(value, environ) for name, value in (headers or {}).items()}
    for name, value in out.items():
        check_header(name, value)
    return out


def end_to_end(headers: Iterable[tuple[str, str]], drop: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Headers without hop-by-hop ones (nor those a ``Connection`` header names, nor ``drop``)."""
    # On every forwarded request and response: one pass, each name lowered once.
    gone = HOP_BY_HOP.union(d.lower() for d in drop) if drop else HOP_BY_HOP
    kept: list[tuple[str, str, str]] = []
    named: set[str] | None = None
    for name, value in headers:
        lower = name.lower()
        if lower == "connection":
            named = (named or set()) | {token.strip().lower() for token in value.split(",")}
        elif lower not in gone:
            kept.append((lower, name, value))
    return [(name, value) for lower, name, value in kept if named is None or lower not in named]


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lower case, without parameters: media types
    are case-insensitive (RFC 9110 §8.3.1), so ``Text/Event-Stream; charset=utf-8`` is an SSE stream."""
    return (content_type or "").partition(";")[0].strip().lower()


def accepts(accept: str | None, media: str) -> bool:
    """Whether an ``Accept`` value lists ``media`` (lower case), whatever case the client wrote it in."""
    return any(media_type(item) == media for item in (accept or "").split(","))


def that_matter(headers: Iterable[tuple[str, str]], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """The MCP-relevant headers of a request or response, credentials redacted, for a frame's metadata."""
    extra = [n.lower() for n in extra_names]
    wanted = MATTERS.union(extra) if extra else MATTERS
    keep = {name: value for name, value in headers if name.lower() in wanted}
    if not extra and not any(map(is_secret_header, keep)):
        return keep  # the common case, once or twice per request: no credential to hide
    return redact(keep, extra) if keep else keep


def lowered(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names in lower case, as HTTP/2 and most servers send them: one JSON key for the views."""
    return {name.lower(): value for name, value in headers.items()}


def redact(headers: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """Credentials replaced by stable placeholders (see :mod:`mcptape.redact`)."""
    from mcptape.redact import redact_headers

    return dict(redact_headers(headers, extra_names))


def header_value(value: str) -> str:
    """A value as an HTTP header carries it: base64-wrapped (``=?base64?…?=``) unless plain ASCII."""
    if _SAFE.fullmatch(value) and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def routing_headers(message: object) -> dict[str, str]:
    """``Mcp-Method``/``Mcp-Name``/``MCP-Protocol-Version`` for a 2026-07-28 request (from its ``_meta``).

    Empty for anything else: mcptape forwards what the client sends and never upgrades
    a 2025 session into a 2026 one.
    """
    if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
        return {}
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    if not isinstance(version, str):
        return {}
    method = message["method"]
    out = {PROTOCOL_VERSION: version, MCP_METHOD: method}
    key = NAME_BEARING.get(method)
    if key is not None and isinstance(params, dict) and isinstance(params.get(key), str):
        out[MCP_NAME] = header_value(params[key])
    return out
