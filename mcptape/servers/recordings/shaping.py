"""How rows of the recordings become tool results: bounded texts, sessions, exchanges, events, query values.

Pure but for :func:`events`, which reads a session's events from a connection it is given.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from mcptape.servers.recordings.arguments import ToolFailure

MAX_EVENTS = 200  # show_session's events, at most

EXCHANGE_FIELDS = (
    "direction", "method", "rpc_id", "request_seq", "response_seq", "requested_at",
    "latency_ms", "is_error", "error_code", "error_message", "answered_by",
)  # fmt: skip


def matching(column: Any, value: str) -> Any:
    """``column`` equal to ``value``, or like it when it is a shell pattern."""
    if not any(c in value for c in "*?"):
        return column == value
    like = (
        value.replace("\\", "\\\\")
        .replace("%", "\\%")
        .replace("_", "\\_")
        .replace("*", "%")
        .replace("?", "_")
    )
    return column.like(like, escape="\\")


def when(value: str | None, key: str) -> float | None:
    """Epoch seconds from ISO 8601 (local time when it names no zone) or a number."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise ToolFailure(
            f"{key}: {value!r} is neither ISO 8601 (2026-01-31, 2026-01-31T14:00) nor epoch seconds"
        ) from None


def session(values: list[Any]) -> dict[str, Any]:
    """A session as `mcptape sessions --json` gives it (:func:`mcptape.cli.sessions.data_row`), as a dict."""
    from mcptape.store.describe import DATA_COLUMNS

    return dict(zip(DATA_COLUMNS, values, strict=True))


def cut(text: str | None, chars: int) -> str | None:
    """``text`` cut at ``chars`` characters, saying how many more there were."""
    if text is None or len(text) <= chars:
        return text
    return f"{text[:chars]}... [{len(text) - chars} more characters]"


def exchange(row: Any, chars: int) -> dict[str, Any]:
    """A row of the exchanges view whose texts SQL cut at ``chars`` (their full lengths beside them)."""
    item = {key: row[key] for key in EXCHANGE_FIELDS}
    for key in ("request", "response"):
        text, length = row[key], row[f"{key}_length"]
        if text is not None and length is not None and length > chars:
            text = f"{text}... [{length - chars} more characters]"
        item[key] = text
    if isinstance(item["latency_ms"], float):
        item["latency_ms"] = round(item["latency_ms"], 3)
    return item


def events(conn: Any, session_id: str, chars: int) -> list[dict[str, Any]]:
    """The session's first events (stderr, process start and exit, faults), texts cut at ``chars``."""
    import orjson

    from mcptape.store.queries import session_events

    out: list[dict[str, Any]] = []
    for event in session_events(conn, session_id):
        if len(out) >= MAX_EVENTS:
            break
        data: Any = None
        if event.data is not None:
            data = cut(event.data, chars)
            if data == event.data:
                with contextlib.suppress(orjson.JSONDecodeError):
                    data = orjson.loads(event.data)
        out.append({"ts": event.ts, "kind": event.kind, "text": cut(event.text, chars), "data": data})
    return out


def query_value(value: Any, chars: int) -> tuple[Any, int]:
    """A query value as JSON can carry it, cut at ``chars``; and 1 when it was cut."""
    if isinstance(value, bytes | bytearray | memoryview):
        value = "x'" + bytes(value)[: chars // 2].hex() + "'" + ("..." if len(value) > chars // 2 else "")
        return value, int(value.endswith("..."))
    if isinstance(value, str):
        shown = cut(value, chars)
        return shown, int(shown is not value)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value), 0
    if value is None or isinstance(value, bool | int | float):
        return value, 0
    return str(value), 0
