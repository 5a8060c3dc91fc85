"""Row shaping for the store: sessions, frames and events as the values the writer inserts.

``frame_row`` turns a :class:`~mcptape.wire.frame.Frame` into a ``frames`` row in
:data:`FRAME_COLUMNS` order (UTF-8 text, raw bytes when text cannot hold them, a cut
for frames over :data:`MAX_FRAME_BYTES`); ``new_session_row`` and ``session_values``
shape ``sessions`` values; ``json_text`` encodes metadata and event data;
``insert_sql`` spells the driver-level INSERT for a paramstyle. No threads and no
database here: :mod:`mcptape.store.writer` and :mod:`mcptape.store.engine` call these.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any, Final

import orjson
import sqlalchemy as sa

from mcptape import __version__
from mcptape.store.schema import sessions
from mcptape.wire.frame import Frame

MAX_FRAME_BYTES: Final = 64 << 20
# The text kept of a frame cut at MAX_FRAME_BYTES (its bytes are all in ``raw``).
CUT_PREVIEW_BYTES: Final = 64 << 10
FRAME_COLUMNS: Final = (
    "session_id",
    "seq",
    "ts",
    "direction",
    "origin",
    "kind",
    "method",
    "rpc_id",
    "size",
    "text",
    "raw",
    "meta",
    "request_seq",
)
# The value of ``text`` for SQLite when a row carries the frame's bytes (``text_bytes``):
# SQLite turns a BLOB into TEXT in place, so the bytes are not copied once more.
TEXT_FROM_BYTES: Final = "CAST({} AS TEXT)"
_CHECK_CHUNK: Final = 1 << 20
# Frames from this size on are stored from their bytes (``text_bytes``); a smaller one is
# decoded: its copy is cheap and a str is what the driver binds fastest.
TEXT_BYTES_FROM: Final = 64 << 10
SESSION_COLUMNS: Final = frozenset(column.name for column in sessions.columns) - {"id"}
EVENT_COLUMNS: Final = ("session_id", "ts", "kind", "text", "data")


TEXT_AT: Final = FRAME_COLUMNS.index("text")
"""Where a frame row holds its text (a large frame's bytes are handed off from there)."""


def frame_row(
    session_id: str,
    seq: int,
    frame: Frame,
    method: str | None = None,
    request_seq: int | None = None,
    *,
    text_bytes: bool = False,
) -> tuple[Any, ...]:
    """The ``frames`` row of a frame, in :data:`FRAME_COLUMNS` order.

    ``method`` stands in for a frame that has none (a response gets its request's), and
    ``request_seq`` is the ``seq`` of the request a response answers (see
    :mod:`mcptape.store.correlation`).

    ``text`` is the bytes as UTF-8; when that cannot hold them exactly (invalid UTF-8,
    a NUL byte, which PostgreSQL text refuses) ``raw`` keeps the bytes. A frame over
    :data:`MAX_FRAME_BYTES` keeps its first :data:`MAX_FRAME_BYTES` bytes in ``raw``
    (a view of the frame's bytes, not a copy), the first :data:`CUT_PREVIEW_BYTES` of
    them as ``text``, its full ``size`` and ``{"truncated": true}`` in ``meta``.

    ``text_bytes``: when the bytes are valid UTF-8 without NUL, ``text`` is the frame's
    bytes themselves, not a decoded copy, for a statement that casts them to text
    (:data:`TEXT_FROM_BYTES`): decoding a 64 MiB frame costs another 64 MiB (up to four
    times that for non-ASCII text) while it waits to be bound.
    """
    data = frame.data
    size = len(data)
    meta = frame.meta
    raw: bytes | memoryview | None = None
    text: str | bytes
    if size > MAX_FRAME_BYTES:
        # Stored once: the cut bytes as a view of the frame (no copy) and, as text, only a
        # preview; a cut frame is no JSON any more, so the views have no use for more text.
        raw = memoryview(data)[:MAX_FRAME_BYTES]
        meta = {**meta, "truncated": True} if meta else {"truncated": True}
        text = bytes(raw[:CUT_PREVIEW_BYTES]).decode(errors="replace").replace("\x00", "\ufffd")
    elif text_bytes and _utf8_without_nul(data):
        text = data
    else:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            text = data.decode(errors="replace")
            raw = data
        if "\x00" in text:
            text = text.replace("\x00", "\ufffd")
            raw = data
    found = frame.classification
    return (
        session_id,
        seq,
        frame.ts,
        frame.direction,
        frame.origin,
        found.kind,
        found.method or method,
        found.rpc_id,
        size,
        text,
        raw,
        None if meta is None else json_text(meta),
        request_seq,
    )


def new_session_row(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A whole ``sessions`` row: ``fields`` (``mode`` required) over the defaults of a session started now.

    The defaults: a new id (uuid4 hex), ``started_at`` now, ``status`` ``running``, this
    process's ``pid`` (so a reader can tell a session whose recorder died) and mcptape's version.
    """
    if "mode" not in fields:
        raise TypeError("a session needs a mode (record, proxy, call, replay, serve)")
    row: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "started_at": time.time(),
        "status": "running",
        "pid": os.getpid(),
        "mcptape_version": __version__,
    }
    row.update(session_values({k: v for k, v in fields.items() if v is not None}))
    return row


def session_values(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Check session column names and encode dicts and lists as JSON text."""
    unknown = sorted(set(fields) - SESSION_COLUMNS)
    if unknown:
        raise TypeError(
            f"sessions has no column {', '.join(unknown)}; columns: {', '.join(sorted(SESSION_COLUMNS))}"
        )
    return {
        name: json_text(value) if isinstance(value, dict | list) else without_nul(value)
        for name, value in fields.items()
    }


# NUL (PostgreSQL text refuses it) and lone UTF-16 surrogates (no UTF-8 can hold them:
# sqlite3 and psycopg raise). Surrogates reach us from argv and paths that are not UTF-8
# (Python decodes them with surrogateescape) and from JSON escapes such as "\ud800".
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")


def without_nul(value: Any) -> Any:
    """``value`` with each character no database text can hold (NUL, a lone surrogate) turned into U+FFFD.

    A command line or session name that is not UTF-8 is recorded with U+FFFD where its
    bytes were, instead of failing the whole session.
    """
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    return value


def json_text(value: object) -> str:
    """Compact JSON for a metadata value; what JSON cannot hold is written as its ``str()``."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        pass
    # json escapes what orjson refuses (a lone surrogate becomes "\\udcff", text again).
    try:
        return json.dumps(value, default=str, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(repr(value))


def insert_sql(
    table: sa.Table, columns: tuple[str, ...], paramstyle: str, wrap: Mapping[str, str] | None = None
) -> str | None:
    """The driver-level INSERT of ``columns`` for a DB-API paramstyle, None when unsupported.

    ``wrap`` gives an SQL template (``{}`` stands for the marker) for some columns, such
    as :data:`TEXT_FROM_BYTES` for ``text``.
    """
    marker = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(paramstyle)
    if marker is None:
        return None
    values = [(wrap or {}).get(column, "{}").format(marker) for column in columns]
    return f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(values)})"


def _utf8_without_nul(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 with no NUL byte, checked without a decoded copy of it all."""
    if b"\x00" in data:
        return False
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(view), _CHECK_CHUNK):
            decoder.decode(view[start : start + _CHECK_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True
