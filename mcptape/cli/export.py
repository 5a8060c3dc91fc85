"""`mcptape export`: a session as JSONL in the corpus format, so it can go wherever a corpus file can.

One line per frame, ``{"dir": "c2s"|"s2c", "t": seconds since the session started,
"frame": "<exact text>"}``, written like Python's ``json.dumps`` does by default
(ASCII with ``\\u`` escapes), which is how the corpus files are written. Two keys
appear only when needed: ``"origin": "proxy"`` for frames mcptape wrote itself, and
``"raw_b64"`` (the exact bytes, base64) for frames whose bytes are not valid UTF-8.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError, db_option

if TYPE_CHECKING:
    from mcptape.store.queries import StoredFrame


def export_line(frame: StoredFrame, started_at: float) -> str:
    """One frame as a corpus line (without its newline)."""
    import base64
    import json

    obj: dict[str, Any] = {"dir": frame.direction, "t": round(frame.ts - started_at, 6), "frame": frame.text}
    if frame.origin == "proxy":
        obj["origin"] = "proxy"
    if frame.raw is not None:
        obj["raw_b64"] = base64.b64encode(frame.raw).decode("ascii")
    return json.dumps(obj)


def write_export(out: IO[str], frames: Any, started_at: float) -> int:
    """Write every frame as a corpus line; returns how many were written."""
    count = 0
    for frame in frames:
        out.write(export_line(frame, started_at) + "\n")
        count += 1
    return count


@click.command()
@click.argument("session")
@db_option
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default="-",
    help="Write to FILE (replaced only once the export is complete) instead of stdout.",
)
def export(session: str, db: str | None, output: str) -> None:
    """Export a session as JSONL, one frame per line, in the corpus format.

    SESSION is a session id, a unique prefix of one, a session name (the
    latest with that name) or `last`. Each line is
    {"dir": "c2s"|"s2c", "t": SECONDS_SINCE_START, "frame": "EXACT TEXT"},
    plus "origin": "proxy" for frames mcptape wrote itself and "raw_b64" (the
    exact bytes in base64) for frames that were not valid UTF-8. The frames
    are the recorded text, unchanged: an export can be replayed, diffed or
    added to a test corpus.

    \b
    Examples:
      mcptape export last > session.jsonl
      mcptape export 3f9a2c -o tests/data/regression.jsonl
      mcptape export everything | jq -r .frame | head
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import database_message, open_for_reading, session_or_error
    from mcptape.store.queries import connect, session_frames

    store = open_for_reading(db)
    try:
        with connect(store) as conn:
            row = session_or_error(conn, session)
            frames = session_frames(conn, row["id"])
            if output == "-":
                write_export(sys.stdout, frames, row["started_at"])
                return
            partial = f"{output}.partial"
            try:
                with open(partial, "w", encoding="utf-8", newline="\n") as out:
                    count = write_export(out, frames, row["started_at"])
                os.replace(partial, output)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(partial)
                raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
            click.echo(f"exported {count} frames of session {row['id'][:12]} to {output}", err=True)
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()
