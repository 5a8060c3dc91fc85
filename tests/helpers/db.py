"""Reading a recording database from a test with the stdlib sqlite3 module (not mcptape's store)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def query(db: Path | str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Every row ``sql`` gives on the SQLite file ``db``; the connection is closed after."""
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def session_rows(
    recorded: tuple[sqlite3.Connection, dict[str, str]], sql: str, session: str
) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts, with ``:s`` bound to the id of the session named ``session``."""
    conn, ids = recorded
    return [dict(row) for row in conn.execute(sql, {"s": ids[session]})]
