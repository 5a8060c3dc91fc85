"""Frames written many rows to an INSERT (SQLite) land exactly as one row to an INSERT does."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from mcptape.store import open_store
from mcptape.store.operations import _FRAME, ROWS_PER_INSERT
from mcptape.wire.frame import Frame

COLUMNS = "seq, ts, direction, origin, kind, method, rpc_id, size, text, raw, meta, request_seq"


def _frames() -> list[Frame]:
    """Every shape a row takes, more than two INSERTs' worth and a remainder."""
    out: list[Frame] = []
    for i in range(5 * ROWS_PER_INSERT + 7):
        shape = i % 7
        if shape == 0:
            data = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}' % i
        elif shape == 1:
            data = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % (i - 1)
        elif shape == 2:
            data = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"h\xc3\xa9 \xe2\x9c\x93"}}'
        elif shape == 3:
            data = b'{"jsonrpc":"2.0","id":5,"method":"bad utf8","params":"\xff\xfe"}'  # kept in raw
        elif shape == 4:
            data = b'{"jsonrpc":"2.0","id":%d,"result":{"t":"%s"}}' % (
                i,
                b"y" * (70 << 10),
            )  # text from bytes
        elif shape == 5:
            data = b"not json \x00 with a NUL"
        else:
            data = b'[{"jsonrpc":"2.0","id":"b%d","method":"a"},{"jsonrpc":"2.0","method":"b"}]' % i
        meta = {"eol": False} if i == 9 else None
        out.append(Frame(data, "c2s" if shape in (0, 3, 6) else "s2c", ts=1000.0 + i, meta=meta))
    return out


def _write(db: Path, *, one_row_each: bool) -> list[tuple[object, ...]]:
    store = open_store(str(db))
    sid = store.create_session(mode="record", name="rows")
    writer = store.writer(batch_size=1000)
    statements = writer._statements
    if one_row_each:
        statements._frames_many_sql = None  # the executemany path
    sizes: list[int] = []
    execute = statements.execute

    def counted(conn: Any, tag: int, rows: list[Any]) -> None:
        if tag == _FRAME:
            sizes.append(len(rows))
        execute(conn, tag, rows)

    statements.execute = counted  # type: ignore[method-assign]
    writer.flush()
    for seq, frame in enumerate(_frames(), 1):
        writer.add_frame(sid, seq, frame)
    writer.close()
    assert writer.frames_written == len(_frames()) and not writer.errors
    assert max(sizes) > 2 * ROWS_PER_INSERT  # several INSERTs of many rows, and a remainder
    store.close()
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"select {COLUMNS}, typeof(text) from frames order by seq").fetchall()
    finally:
        conn.close()


def test_many_rows_to_an_insert_store_what_one_row_to_an_insert_stores(tmp_path: Path) -> None:
    many = _write(tmp_path / "many.db", one_row_each=False)
    single = _write(tmp_path / "single.db", one_row_each=True)
    assert len(many) == len(_frames())
    assert many == single
    assert {row[-1] for row in many} == {"text"}  # a large frame's bytes are stored as text too
    assert [row[0] for row in many] == list(range(1, len(_frames()) + 1))
