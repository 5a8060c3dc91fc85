"""The sandbox `mcptape sql` runs a user's query in: reading the recording is all it can do.

On SQLite the query runs on a connection of its own, opened read-only, with

- an authorizer (:func:`authorize`, pure) that allows reading tables and views, calling
  functions other than ``load_extension``, recursive CTEs and the pragmas that only
  describe the schema, and denies everything else: ATTACH (which would create a file
  anywhere, or roll back another database's hot journal), DETACH, writes, schema
  changes, transactions, pragma assignments;
- limits: no attached databases, and no string or blob longer than the largest value a
  recording holds (``zeroblob(900000000)`` fails at once instead of allocating 858 MiB);
- a :class:`Budget`, checked by SQLite's progress handler while the query runs and by
  the caller for every row it formats: the time limit covers the whole command, a
  table's buffered cells have a memory limit, and Ctrl-C stops the query cleanly.

On PostgreSQL the store's read-only transaction with a statement timeout does the
database's part; the :class:`Budget` bounds the formatting the same way.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Final

# Stored frames are cut at 64 MiB (mcptape.store.rows.MAX_FRAME_BYTES); a little more,
# so every value a recording holds can still be read, and nothing much bigger made.
MAX_VALUE_BYTES: Final = 65 << 20
# What a --table result may buffer (cells are measured before the table is drawn).
MAX_TABLE_BYTES: Final = 128 << 20
_PROGRESS_STEPS: Final = 10_000  # virtual-machine steps between two checks of the budget

# Pragmas that only describe the database, with or without an argument.
_DESCRIBING_PRAGMAS: Final = frozenset(
    {
        "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
        "foreign_key_list", "function_list", "pragma_list", "collation_list", "module_list",
        "compile_options", "database_list", "page_count", "freelist_count", "data_version",
    }
)  # fmt: skip
# Pragmas that are harmless to read but set something when given a value.
_READABLE_SETTINGS: Final = frozenset(
    {
        "user_version",
        "application_id",
        "schema_version",
        "page_size",
        "encoding",
        "journal_mode",
        "foreign_keys",
    }
)
_ALLOWED_ACTIONS: Final = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_SCHEMA_TABLES: Final = frozenset({"sqlite_master", "sqlite_temp_master", "sqlite_schema"})
_DENIED_FUNCTIONS: Final = frozenset({"load_extension"})


class QueryStopped(Exception):
    """The budget ran out: ``reason`` is ``time``, ``memory`` or ``interrupted``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    """SQLite's authorizer callback: SQLITE_OK for reading, SQLITE_DENY for anything else."""
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 in _SCHEMA_TABLES:
        # SQLite asks this while it sets up a table-valued pragma (pragma_table_info('x'));
        # nothing can write here anyway: the file is opened read-only, with query_only on.
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _DESCRIBING_PRAGMAS or (name in _READABLE_SETTINGS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class Budget:
    """Time, memory and Ctrl-C for one command: :meth:`check` raises :class:`QueryStopped`."""

    def __init__(self, timeout_s: float, max_table_bytes: int = MAX_TABLE_BYTES) -> None:
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s
        self.max_table_bytes = max_table_bytes
        self.interrupted = False

    def exhausted(self) -> str | None:
        """Why the work must stop now (``interrupted`` or ``time``), or None."""
        if self.interrupted:
            return "interrupted"
        if time.monotonic() > self.deadline:
            return "time"
        return None

    def stop(self, reason: str) -> QueryStopped:
        """The exception that says why the command stopped, in words for the user."""
        if reason == "interrupted":
            elapsed = time.monotonic() - self.started
            return QueryStopped(reason, f"the query was interrupted (Ctrl-C) after {elapsed:.1f} s")
        if reason == "memory":
            return QueryStopped(
                reason,
                f"the result is over {self.max_table_bytes >> 20} MiB, more than a table can hold; "
                "narrow the query (WHERE, LIMIT, fewer columns) or use --json, --nl or --csv, which stream",
            )
        return QueryStopped(
            reason,
            f"the query ran longer than its time limit of {self.timeout_s:g} s (formatting included) "
            "and was stopped; narrow it (WHERE, LIMIT) or allow more time with --timeout",
        )

    def check(self) -> None:
        """Raise :class:`QueryStopped` when time is up or Ctrl-C was pressed."""
        reason = self.exhausted()
        if reason is not None:
            raise self.stop(reason)

    def guard(self, rows: Iterable[Sequence[Any]], *, buffered: bool) -> Iterator[Sequence[Any]]:
        """``rows`` one by one, checking the budget before each; ``buffered`` (a table, which
        holds every row before drawing) also counts their size against the memory limit."""
        used = 0
        for row in rows:
            self.check()
            if buffered:
                used += sum(_size(value) for value in row)
                if used > self.max_table_bytes:
                    raise self.stop("memory")
            yield row

    @contextlib.contextmanager
    def catching_ctrl_c(self) -> Iterator[None]:
        """While inside, Ctrl-C sets :attr:`interrupted` (seen by :meth:`check` and SQLite's
        progress handler) instead of raising KeyboardInterrupt in the middle of a C call."""

        def on_sigint(_signum: int, _frame: FrameType | None) -> None:
            self.interrupted = True

        try:
            previous = signal.signal(signal.SIGINT, on_sigint)
        except ValueError:  # not the main thread: Ctrl-C is not ours to take
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def _size(value: Any) -> int:
    if isinstance(value, str | bytes | bytearray):
        return len(value) + 48
    return 24


def sqlite_text(data: bytes) -> str | bytes:
    """A TEXT value as Python text, whatever bytes it holds.

    SQLite's JSON functions turn a JSON ``"\\ud800"`` (a lone surrogate a server may send)
    into its 3-byte CESU form, which strict UTF-8 refuses: without this, one such log
    message made every query over ``log_messages`` fail. Those come back as the lone
    surrogate itself; other bytes that are not UTF-8 (``cast(x'ff' as text)``) as bytes.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data


def open_sqlite(path: Path, budget: Budget, *, busy_timeout_s: float = 5.0) -> sqlite3.Connection:
    """A read-only connection to the recording at ``path`` that can do nothing but read it."""
    from mcptape.store.sqlite_engine import readonly_uri

    conn = sqlite3.connect(
        readonly_uri(path),
        uri=True,
        timeout=busy_timeout_s,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.text_factory = sqlite_text
    try:
        conn.execute("PRAGMA query_only = ON")
        # SQLite reads the file lazily: `select 1` would "work" on any file at all.
        conn.execute("select count(*) from sqlite_master").fetchall()
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.set_authorizer(authorize)

        def progress() -> int:
            return 1 if budget.exhausted() else 0

        conn.set_progress_handler(progress, _PROGRESS_STEPS)
    except BaseException:
        conn.close()
        raise
    return conn


def sqlite_failure(error: sqlite3.Error, budget: Budget) -> QueryStopped | None:
    """The budget's own words for an error SQLite raised because the budget ran out."""
    text = str(error)
    if "interrupted" in text:
        return budget.stop(budget.exhausted() or "time")
    if "too big" in text:
        return QueryStopped(
            "memory",
            f"a value of the result is over the {MAX_VALUE_BYTES >> 20} MiB limit ({text}); "
            "ask for less (substr, length) or narrow the query",
        )
    return None
