"""A recorded session described for people and programs: its status label, its row as
`mcptape sessions --json` gives it, and a database error in one line.

Read by the command line (`sessions`, `show`, `tail`), the viewer and the recordings
server alike, so it lives with the store they read, below all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

    from mcptape.store import Store


DATA_COLUMNS = [
    "id", "name", "mode", "transport", "upstream", "started", "ended", "duration_s",
    "frames", "status", "exit_code", "protocol_version", "client", "server", "replay_of",
]  # fmt: skip


def iso_time(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 with the local UTC offset, for machine-readable output."""
    if ts is None:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="milliseconds")


def _peer(name: str | None, version: str | None) -> str | None:
    return f"{name} {version}".rstrip() if name and version else name


def data_row(row: RowMapping, lost: bool = False) -> list[Any]:
    """A session for programs: full id, ISO times, duration in seconds, exit code on its own;
    the status as stored, or ``lost`` for a running session whose recorder is gone."""
    ended = row["ended_at"]
    return [
        row["id"],
        row["name"],
        row["mode"],
        row["transport"],
        row["upstream"],
        iso_time(row["started_at"]),
        iso_time(ended),
        round(ended - row["started_at"], 6) if ended is not None else None,
        row["frames"],
        "lost" if lost else row["status"],
        row["exit_code"],
        row["protocol_version"],
        _peer(row["client_name"], row["client_version"]),
        _peer(row["server_name"], row["server_version"]),
        row["replay_of"],
    ]


def recorder_gone(store: Store, row: RowMapping) -> bool | None:
    """For a ``running`` session: is its recorder known to be gone (True), alive (False), unknown?

    Only a file on this machine is checked: a server database (PostgreSQL) holds sessions
    recorded on other machines, whose pids mean nothing here.
    """
    from mcptape.store.status import recorder_alive

    if row["status"] != "running" or store.path is None:
        return None
    alive = recorder_alive(row.get("pid"), row["started_at"])
    return None if alive is None else not alive


def server_spoke(conn: Any, session_id: str) -> bool:
    """Whether the server sent the session at least one frame."""
    from sqlalchemy import select

    from mcptape.store.schema import frames

    query = (
        select(frames.c.seq)
        .where(frames.c.session_id == session_id, frames.c.direction == "s2c", frames.c.origin == "server")
        .limit(1)
    )
    return conn.execute(query).first() is not None


def stopped_by_mcptape(conn: Any, session_id: str) -> bool:
    """Whether mcptape signalled the server at the end, as the session's exit event says."""
    from sqlalchemy import select

    from mcptape.store.schema import events
    from mcptape.store.status import stopped_in

    query = (
        select(events.c.data)
        .where(events.c.session_id == session_id, events.c.kind == "process_exit")
        .order_by(events.c.id.desc())
        .limit(1)
    )
    return stopped_in(conn.execute(query).scalar())


def session_label(store: Store, conn: Any, row: RowMapping) -> str:
    """The status label of one session row, looking at the recording only when it matters."""
    from mcptape.store.status import status_label

    gone = recorder_gone(store, row)
    spoke = True
    stopped = False
    code = row["exit_code"]
    if row["status"] in ("ok", "closed", "error") and code is not None and code != 0:
        spoke = server_spoke(conn, row["id"])
    if row["status"] in ("ok", "closed", "interrupted") and code is not None and code != 0:
        stopped = stopped_by_mcptape(conn, row["id"])
    return status_label(
        row["status"],
        code,
        server_spoke=spoke,
        recorder_alive=None if gone is None else not gone,
        stopped_by_us=stopped,
    )


def database_message(exc: BaseException) -> str:
    """The database's own one-line message for an SQLAlchemy error, without SQL or links."""
    original = getattr(exc, "orig", None) or exc
    lines = str(original).strip().splitlines()
    return lines[0] if lines else type(original).__name__
