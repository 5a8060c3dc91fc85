"""Row shaping for the store: frames and events as the tuples the writer inserts.

``frame_row`` turns a :class:`~mcptape.frames.Frame` into a ``frames`` row in
:data:`FRAME_COLUMNS` order (UTF-8 text, raw bytes when text cannot hold them, a cut
for frames over :data:`MAX_FRAME_BYTES`); ``json_text`` encodes metadata and event
data; ``_insert_sql`` spells the driver-level INSERT for a paramstyle. No threads here:
:mod:`mcptape.store.writer` calls these on its writer thread.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
import sqlalchemy as sa

from mcptape.frames import Frame

MAX_FRAME_BYTES: Final = 64 << 20
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
)
EVENT_COLUMNS: Final = ("session_id", "ts", "kind", "text", "data")


def frame_row(session_id: str, seq: int, frame: Frame) -> tuple[Any, ...]:
    """The ``frames`` row of a frame, in :data:`FRAME_COLUMNS` order.

    ``text`` is the bytes as UTF-8; when that cannot hold them exactly (invalid UTF-8,
    a NUL byte, which PostgreSQL text refuses) ``raw`` keeps the bytes. A frame over
    :data:`MAX_FRAME_BYTES` keeps its first bytes, its full ``size`` and
    ``{"truncated": true}`` in ``meta``.
    """
    data = frame.data
    size = len(data)
    meta = frame.meta
    raw: bytes | None = None
    if size > MAX_FRAME_BYTES:
        data = raw = data[:MAX_FRAME_BYTES]
        meta = {**meta, "truncated": True} if meta else {"truncated": True}
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = data.decode(errors="replace")
        raw = data
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        raw = data
    return (
        session_id,
        seq,
        frame.ts,
        frame.direction,
        frame.origin,
        frame.kind,
        frame.method,
        frame.rpc_id,
        size,
        text,
        raw,
        None if meta is None else json_text(meta),
    )


def json_text(value: object) -> str:
    """Compact JSON for a metadata value; what JSON cannot hold is written as its ``str()``."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return orjson.dumps(repr(value)).decode()


def _insert_sql(table: sa.Table, columns: tuple[str, ...], paramstyle: str) -> str | None:
    marker = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(paramstyle)
    if marker is None:
        return None
    return f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([marker] * len(columns))})"
