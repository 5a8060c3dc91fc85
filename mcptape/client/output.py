"""What ``call`` prints: result JSON, structured envelopes, NDJSON events, log lines (pure).

The envelope (``--structured``)::

    {"structuredVersion": 1, "success": true|false, "method": "tools/call", "durationMs": 12.3,
     "result": {...} | null, "error": {"category", "code", "message", "data"} | null,
     "logs": [...], "serverRequests": [...], "notifications": [...]}

A tool result with ``isError: true`` has ``success: false``, category ``application``,
the tool's text as the message, and the result kept in ``result``.
"""

from __future__ import annotations

import json
from typing import Any

from mcptape.client.errors import ClientError, ToolError
from mcptape.terminal import safe_lines

STRUCTURED_VERSION = 1


def dumps(value: Any, *, pretty: bool = True) -> str:
    """JSON text as ``call`` prints it (UTF-8 kept, two-space indent unless NDJSON).

    ``json`` escapes C0 controls itself but leaves DEL, C1 controls (U+009B is a CSI on
    many terminals), line separators and bidi overrides raw, and a server chooses every
    string here: they become ``\\uXXXX`` too. The JSON stays valid and means the same.
    """
    if pretty:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Outside strings, json.dumps writes only spaces and (pretty) line feeds, which stay.
    return safe_lines(text)


def envelope(
    method: str,
    duration_s: float,
    result: Any,
    error: ClientError | None,
    logs: list[Any],
    server_requests: list[dict[str, Any]],
    notifications: list[Any],
) -> dict[str, Any]:
    """One structured envelope."""
    if isinstance(error, ToolError):
        result = error.result
    return {
        "structuredVersion": STRUCTURED_VERSION,
        "success": error is None,
        "method": method,
        "durationMs": round(duration_s * 1000, 3),
        "result": result,
        "error": error.as_dict() if error is not None else None,
        "logs": logs,
        "serverRequests": server_requests,
        "notifications": notifications,
    }


def log_line(params: Any) -> str:
    """A ``notifications/message`` for stderr: ``log LEVEL [LOGGER]: DATA``."""
    if not isinstance(params, dict):
        return f"log: {dumps(params, pretty=False)}"
    level = params.get("level", "info")
    logger = f" [{params['logger']}]" if params.get("logger") else ""
    data = params.get("data")
    text = data if isinstance(data, str) else dumps(data, pretty=False)
    return f"log {level}{logger}: {text}"


def error_line(error: ClientError) -> str:
    """An error for stderr: ``error (CATEGORY[, code N]): MESSAGE``; a tool error that
    does not fail the run (no ``--fail-on-error``) is a warning."""
    code = f", code {error.code}" if error.code is not None else ""
    word = "warning" if isinstance(error, ToolError) and error.status == 0 else "error"
    # A link's own error answer starts "mcptape: "; the line already says who speaks.
    message = error.message.removeprefix("mcptape: ")
    return f"{word} ({error.category}{code}): {message}"


def event(kind: str, body: dict[str, Any]) -> str:
    """One NDJSON line of ``--follow``: ``{"type": kind, ...body}``."""
    return dumps({"type": kind, **body}, pretty=False)
