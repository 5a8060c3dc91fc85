"""The resources of ``mcptape mcp``: the documentation of the SQL views an agent queries.

``mcptape://views`` lists the views and tables; ``mcptape://views/NAME`` documents one view:
what it holds (:func:`mcptape.store.views.descriptions`), its columns as the database has
them, and the SELECT that defines it (the migrations' frozen SQL, for this database).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcptape.store.views import CURRENT, VIEW_NAMES, descriptions

if TYPE_CHECKING:
    from mcptape.store import Store

PREFIX: Final = "mcptape://views"
TABLES: Final = {
    "sessions": "one row a session: id, name, mode, transport, upstream, times, status, exit code, "
    "client and server names and versions, protocol version, replay_of",
    "frames": "every frame as it was on the wire: session_id, seq, ts, direction (c2s, s2c), origin "
    "(client, server, proxy), kind, method, rpc_id (JSON text), size, text, raw, meta (JSON)",
    "events": "what is not a frame: session_id, ts, kind (stderr, process_start, process_exit, fault, "
    "error, ...), text, data (JSON)",
}


def uris() -> dict[str, str]:
    """Each resource's URI and its one-line description."""
    found = {PREFIX: "The SQL views and tables of the recordings, one line each"}
    for name, text in descriptions().items():
        found[f"{PREFIX}/{name}"] = f"The {name} view: {_plain(text)}"
    return found


def read(uri: str, store: Store | None) -> str | None:
    """The Markdown text of a resource; None for an unknown URI. ``store``: for columns and dialect."""
    if uri == PREFIX:
        lines = ["# Views", ""]
        lines += [f"- `{name}`: {_plain(text)} ({PREFIX}/{name})" for name, text in descriptions().items()]
        lines += ["", "# Tables", ""]
        lines += [f"- `{name}`: {text}" for name, text in TABLES.items()]
        lines += ["", 'Times are seconds since the Unix epoch; rpc_id is JSON text (1 and "1" differ).']
        return "\n".join(lines) + "\n"
    name = uri.removeprefix(PREFIX + "/")
    if not uri.startswith(PREFIX + "/") or name not in VIEW_NAMES:
        return None
    view = next(v for v in CURRENT if v.name == name)
    dialect = store.engine.dialect.name if store is not None else "sqlite"
    lines = [f"# {name}", "", _plain(descriptions()[name]), "", "## Columns", ""]
    columns = _columns(store, name)
    lines += (
        [f"- `{column}` ({kind})" for column, kind in columns]
        if columns
        else ["(no database to read them from)"]
    )
    lines += ["", f"## Definition ({dialect})", "", "```sql", view.select_for(dialect).strip(), "```"]
    return "\n".join(lines) + "\n"


def _columns(store: Store | None, view: str) -> list[tuple[str, str]]:
    if store is None:
        return []
    from sqlalchemy import inspect

    try:
        columns = inspect(store.engine).get_columns(view)
    except Exception:  # an old database without this view: the definition still says it
        return []
    # SQLite gives an expression's column no type (NULL): any value.
    return [(c["name"], "any" if str(c["type"]) in ("", "NULL") else str(c["type"])) for c in columns]


def _plain(text: str) -> str:
    return text.replace("``", "`")
