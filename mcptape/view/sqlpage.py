"""The viewer's SQL page: the views and tables with their columns, a query's first rows, its CSV.

Every query runs in `mcptape sql`'s sandbox (:func:`mcptape.store.sql_query.run_query`):
read-only, with a time limit; nothing here opens the database another way.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any, Final

from mcptape.store.sql_query import QueryFailed, run_query
from mcptape.store.sql_sandbox import Budget, QueryStopped

ROWS_SHOWN: Final = 1000
QUERY_TIMEOUT_S: Final = 10.0
CSV_TIMEOUT_S: Final = 60.0
CELL_MAX: Final = 10_000  # characters of one cell shown in the page (the CSV has them whole)
_SQLITE_SCHEMA: Final = (
    "select name, type from sqlite_master where type in ('table', 'view') "
    "and name not like 'sqlite_%' and name != 'alembic_version' order by type desc, name"
)
_SERVER_SCHEMA: Final = (
    "select c.table_name, t.table_type, c.column_name from information_schema.columns c "
    "join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema "
    "where c.table_schema = current_schema() and c.table_name != 'alembic_version' "
    "order by t.table_type, c.table_name, c.ordinal_position"
)


class SqlError(Exception):
    """A query that failed or ran out of time: ``str()`` is one line."""


def schema(store: Any) -> list[dict[str, Any]]:
    """Views first, then tables, each with its columns in order."""
    budget = Budget(QUERY_TIMEOUT_S)
    found: dict[str, dict[str, Any]] = {}
    try:
        if store.path is not None:
            with run_query(store, _SQLITE_SCHEMA, budget) as result:
                names = list(result[1]) if result else []
            for name, kind in names:
                with run_query(store, f"select name from pragma_table_info({_quote(name)})", budget) as cols:
                    found[name] = {
                        "name": name,
                        "type": kind,
                        "columns": [c[0] for c in cols[1]] if cols else [],
                    }
        else:
            with run_query(store, _SERVER_SCHEMA, budget) as result:
                for name, kind, column in result[1] if result else ():
                    entry = found.setdefault(
                        name, {"name": name, "type": "view" if kind == "VIEW" else "table", "columns": []}
                    )
                    entry["columns"].append(column)
    except (QueryFailed, QueryStopped) as exc:
        raise SqlError(str(exc)) from None
    return sorted(found.values(), key=lambda e: (e["type"] != "view", e["name"]))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _cell(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value), "hex": bytes(value[:64]).hex()}
    if isinstance(value, str) and len(value) > CELL_MAX:
        return value[:CELL_MAX] + f"… ({len(value)} characters)"
    return value


def query(store: Any, sql: str, limit: int = ROWS_SHOWN) -> dict[str, Any]:
    """The first ``limit`` rows of ``sql``: ``{columns, rows, truncated}``."""
    if not sql.strip():
        raise SqlError('the query is empty: give one SQL statement, e.g. "select * from sessions"')
    budget = Budget(QUERY_TIMEOUT_S)
    rows: list[list[Any]] = []
    truncated = False
    try:
        with run_query(store, sql, budget) as result:
            if result is None:
                return {"columns": [], "rows": [], "truncated": False}
            columns, found = result
            for row in budget.guard(found, buffered=True):
                if len(rows) >= limit:
                    truncated = True
                    break
                rows.append([_cell(v) for v in row])
    except (QueryFailed, QueryStopped) as exc:
        raise SqlError(str(exc)) from None
    return {"columns": columns, "rows": rows, "truncated": truncated}


def csv_chunks(store: Any, sql: str) -> Iterator[bytes]:
    """The whole result as CSV (header first), in chunks of about 64 KiB; raises SqlError before the first."""
    from mcptape.store.sql_query import csv_value

    if not sql.strip():
        raise SqlError("the query is empty")
    budget = Budget(CSV_TIMEOUT_S)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    try:
        with run_query(store, sql, budget) as result:
            if result is None:
                return
            columns, found = result
            writer.writerow(columns)
            for row in budget.guard(found, buffered=False):
                writer.writerow([csv_value(v) for v in row])
                if buffer.tell() > 64 << 10:
                    yield buffer.getvalue().encode("utf-8", "surrogateescape")
                    buffer.seek(0)
                    buffer.truncate()
    except (QueryFailed, QueryStopped) as exc:
        raise SqlError(str(exc)) from None
    yield buffer.getvalue().encode("utf-8", "surrogateescape")
