"""Alembic environment: run the revisions on the connection mcptape hands over.

``mcptape.migrations.runner`` passes an open connection, already inside a write
transaction, in ``config.attributes["connection"]``. Developers running the
``alembic`` command themselves pass ``-x db=PATH|URL`` instead (see alembic.ini),
and ``--sql`` prints the SQL without connecting.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from mcptape.store.schema import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables when a later revision must.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_from_command_line() -> None:
    from mcptape.store.engine import open_unmigrated

    db = context.get_x_argument(as_dictionary=True).get("db")
    if not db:
        raise SystemExit("give the database with -x db=PATH|URL")
    store = open_unmigrated(db)
    try:
        with store.engine.begin() as connection:
            _run(connection)
    finally:
        store.close()


def _run_offline() -> None:
    # `alembic ... upgrade head --sql`: print the SQL for a DBA instead of running it.
    from mcptape.store.location import resolve_url

    db = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("db")
    if not db:
        raise SystemExit("give the database with -x db=PATH|URL")
    context.configure(url=resolve_url(db), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


_connection = config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
elif context.is_offline_mode():
    _run_offline()
else:
    _run_from_command_line()
