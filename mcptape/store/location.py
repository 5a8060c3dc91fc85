"""Where a recording database is: the default path, and what ``--db`` means.

``--db`` (or ``$MCPTAPE_DB``) takes a file path or a SQLAlchemy URL. A path becomes
``sqlite:///<absolute path>``; a value that starts like a database URL without its
``//`` (``sqlite:/x.db``, ``postgresql:db``) is refused rather than taken as a file
named ``sqlite:`` in the current directory; a URL that cannot be parsed (a port that
is no number, an unclosed ``[``) is a :class:`StoreError` with one line. Pure
functions, no database.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from mcptape.store.errors import StoreError

# Scheme names SQLAlchemy dialects use, optionally with "+driver".
_URL_LIKE: Final = re.compile(
    r"(?i)(sqlite|postgres|postgresql|mysql|mariadb|oracle|mssql|cockroachdb)(\+[\w.-]+)?:(?!//)"
)


def default_db_path() -> Path:
    """``$MCPTAPE_DB`` when set, else ``mcptape.db`` in the per-user data directory."""
    configured = os.environ.get("MCPTAPE_DB")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("mcptape", appauthor=False)) / "mcptape.db"


def resolve_url(db: str | None) -> str:
    """The SQLAlchemy URL for ``--db``: a URL stays as it is, a path becomes ``sqlite:///<absolute>``.

    Raises :class:`StoreError` for a URL missing its ``//`` (``sqlite:/x.db``).
    """
    if not db:
        configured = os.environ.get("MCPTAPE_DB", "")
        if "://" in configured:
            return configured
        _refuse_url_like(configured)
        path = default_db_path()
    elif "://" in db:
        return db
    else:
        _refuse_url_like(db)
        path = Path(db).expanduser()
    return f"sqlite:///{path.absolute()}"


def _refuse_url_like(db: str) -> None:
    match = _URL_LIKE.match(db)
    if match is None:
        return
    rest = db[match.end() :]
    scheme = match.group(0)[:-1]
    if scheme.lower().startswith("sqlite"):
        path = "/" + rest.lstrip("/") if rest.startswith("/") else rest
        hint = f"give the file path ({path}) or the URL sqlite:///{path}"
    else:
        hint = f"a database URL is {scheme}://user@host/dbname"
    raise StoreError(f"cannot understand the database {db!r}: it looks like a URL without '//'; {hint}")


def parse_url(text: str) -> URL:
    """``text`` as a SQLAlchemy URL; a :class:`StoreError` with one line when it is not one."""
    try:
        return make_url(text)
    except (sa.exc.ArgumentError, ValueError) as error:
        host = text.split("://", 1)[-1].split("/", 1)[0]
        if "[" in host and "]" not in host:
            detail = "its IPv6 host has no closing ']' (user@[::1]:5432/dbname)"
        elif isinstance(error, ValueError):
            detail = "the port is not a number"
        else:
            detail = "it is neither a file path nor a URL"
        raise StoreError(
            f"cannot understand the database {_shown(text)}: {detail}; give a file path or a SQLAlchemy URL "
            "such as postgresql+psycopg://user@host:5432/dbname"
        ) from None


def _shown(text: str) -> str:
    """The URL as a message may quote it: with any password replaced."""
    return repr(re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", text))
