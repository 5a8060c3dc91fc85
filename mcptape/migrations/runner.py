"""Bringing a recording database to the newest revision, once, however many processes open it.

Alembic is configured here in code (``script_location`` is this package's folder), so
no ``alembic.ini`` is looked up from the current directory. A database already at
:data:`HEAD_REVISION` is recognised with one query and without importing Alembic,
which keeps opening a store cheap.

Migration is serialised between processes: on SQLite by an exclusive ``flock`` on
``<db>.lock`` beside the file, on PostgreSQL by ``pg_advisory_lock``. Several
``mcptape record`` processes starting on a brand-new file therefore create the
schema once; the others wait, then find it at head.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

import sqlalchemy as sa

from mcptape.store.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

# The newest revision in versions/; tests/test_store_engine.py checks it against Alembic.
HEAD_REVISION: Final = "0006"
MIGRATIONS_DIR: Final = Path(__file__).resolve().parent
VERSION_TABLE: Final = "alembic_version"
# Any constant shared by all mcptape processes; this is b"mcptape1" read as a big-endian integer.
PG_LOCK_KEY: Final = int.from_bytes(b"mcptape1", "big")


def alembic_config() -> Config:
    """An Alembic configuration for mcptape's revisions that reads no file."""
    from alembic.config import Config

    config = Config()
    # configparser interpolates "%": a folder name containing one must not break the path.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    return config


def known_revisions() -> set[str]:
    """Every revision id this version of mcptape ships."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config())
    return {script.revision for script in scripts.walk_revisions()}


@contextlib.contextmanager
def migration_lock(engine: sa.Engine, lock_path: Path | None) -> Iterator[None]:
    """Hold the lock that serialises migrations of one database between processes."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({PG_LOCK_KEY})")
            conn.commit()
            try:
                yield
            finally:
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({PG_LOCK_KEY})")
                conn.commit()
        return
    if lock_path is None:
        yield
        return
    try:
        import fcntl
    except ImportError:  # not POSIX: rely on SQLite's own locking and the busy timeout
        yield
        return
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise StoreError(
            f"cannot create the lock file {lock_path}: {error.strerror}; "
            "the database's directory must be writable by you"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def table_names(conn: sa.Connection) -> list[str]:
    """Tables in the database (in the current schema on PostgreSQL)."""
    return sa.inspect(conn).get_table_names()


def current_revision(conn: sa.Connection, tables: list[str]) -> str | None:
    """The revision a database is at, or None when mcptape never migrated it."""
    if VERSION_TABLE not in tables:
        return None
    return conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalar()


def upgrade_to_head(engine: sa.Engine, where: str) -> None:
    """Apply every revision the database lacks; call it while holding :func:`migration_lock`.

    ``where`` names the database in error messages (a path, or the URL without password).
    """
    # A deferred read transaction: checking must not take SQLite's write lock from recorders.
    with engine.connect().execution_options(sqlite_begin="DEFERRED") as conn:
        tables = table_names(conn)
        revision = current_revision(conn, tables)
    if revision == HEAD_REVISION:
        return
    if revision is None:
        foreign = sorted(t for t in tables if not t.startswith("sqlite_"))
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise StoreError(
                f"{where} is a database of another application (tables: {shown}), not an mcptape "
                "recording; give mcptape a new file path (--db or MCPTAPE_DB)"
            )
    elif revision not in known_revisions():
        raise StoreError(
            f"{where} was written by a newer mcptape (database revision {revision}, this version knows "
            f"up to {HEAD_REVISION}); upgrade mcptape (pip install -U mcptape)"
        )
    from alembic import command

    config = alembic_config()
    try:
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
    except sa.exc.DBAPIError as error:
        detail = str(error.orig).splitlines()[0] if error.orig is not None else type(error).__name__
        raise StoreError(
            f"could not migrate {where} from revision {revision or 'none'} to {HEAD_REVISION}: {detail}; "
            "the database was left unchanged (the migration is one transaction)"
        ) from None
