"""Engines for database servers (PostgreSQL with psycopg 3, the ``mcptape[postgres]`` extra).

The driver is imported only when such a URL is opened. A Unix socket is given as a
query parameter: ``postgresql+psycopg://user@/dbname?host=/run/postgresql``. A plain
``postgresql://`` URL gets psycopg (SQLAlchemy would pick psycopg2, which the extra
does not ship).
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL

from mcptape.store.errors import StoreError

# An execution option: run a statement without parameters as exactly one statement.
ONE_STATEMENT: Final = "mcptape_one_statement"


def server_engine(url: URL) -> sa.Engine:
    """An engine on a server database; one-line :class:`StoreError` when its driver is missing."""
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    shown = unquote(url.render_as_string(hide_password=True))
    try:
        engine = sa.create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as error:
        raise StoreError(
            f"the driver for {shown} is not installed (no module {error.name}); "
            "for PostgreSQL: pip install 'mcptape[postgres]'"
        ) from None
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ValueError) as error:
        raise StoreError(f"cannot use the database URL {shown}: {str(error).splitlines()[0]}") from None
    if url.get_backend_name() == "postgresql" and url.get_driver_name() == "psycopg":
        _install_psycopg_hooks(engine)
    return engine


def _install_psycopg_hooks(engine: sa.Engine) -> None:
    @event.listens_for(engine, "do_execute_no_params")
    def _one_statement(cursor: Any, statement: str, context: Any) -> bool:
        # psycopg sends a query without parameters with the simple protocol, which runs
        # any number of statements; a prepared statement is always exactly one. A
        # server-side cursor (stream_results) DECLAREs one query and needs no help.
        import psycopg

        if not context.execution_options.get(ONE_STATEMENT) or isinstance(cursor, psycopg.ServerCursor):
            return False
        cursor.execute(statement, prepare=True)
        return True
