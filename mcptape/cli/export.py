"""`mcptape export`: a session's frames as JSONL (the exact wire text of each), as OTLP, or as HAR.

One line per frame, ``{"dir": "c2s"|"s2c", "t": seconds since the session started,
"frame": "<exact text>"}``, written like Python's ``json.dumps`` does by default
(ASCII with ``\\u`` escapes; the test fixtures in tests/data use the same format). Two
keys appear only when needed: ``"origin": "proxy"`` for frames mcptape wrote itself, and
``"raw_b64"`` (the exact bytes, base64) for frames whose bytes are not valid UTF-8.

``--format otlp`` writes the session's spans and duration histograms as OTLP JSON lines
(:mod:`mcptape.telemetry.recorded`), or posts them to an OTLP/HTTP receiver with
``--otlp URL``; ``--format har`` writes its HTTP exchanges as HAR 1.2
(:mod:`mcptape.store.har`).

``-o FILE`` writes a private file (mode 0600: recordings hold what passed between client
and server) under a temporary name and renames it into place when complete; it refuses
to replace anything but a regular file (a symlink, a FIFO, a device).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError, db_option, otlp_option, writing_output
from mcptape.cli.helptext import Command
from mcptape.terminal import safe

if TYPE_CHECKING:
    from mcptape.store.queries import StoredFrame


def export_line(frame: StoredFrame, started_at: float) -> str:
    """One frame as an export line (without its newline)."""
    import base64
    import json

    obj: dict[str, Any] = {"dir": frame.direction, "t": round(frame.ts - started_at, 6), "frame": frame.text}
    if frame.origin == "proxy":
        obj["origin"] = "proxy"
    if frame.raw is not None:
        obj["raw_b64"] = base64.b64encode(frame.raw).decode("ascii")
    return json.dumps(obj)


def write_export(out: IO[str], frames: Any, started_at: float) -> int:
    """Write every frame as an export line; returns how many were written."""
    count = 0
    for frame in frames:
        out.write(export_line(frame, started_at) + "\n")
        count += 1
    return count


def check_target(path: str) -> None:
    """Refuse to replace anything but a regular file: a symlink would be swapped for a file
    (and the data would not go where it points), a FIFO or a device would become a file."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return
    what = (
        "a symlink"
        if stat.S_ISLNK(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )
    raise UserError(
        f"{path} is {what}; `export -o` only creates or replaces regular files: "
        "give another path, or write to stdout (omit -o) and redirect it"
    )


def write_private_file(path: str, write: Callable[[IO[str]], int]) -> int:
    """Write ``path`` (mode 0600) through ``write`` under a temporary name beside it, then
    rename it into place; returns what ``write`` returned. Nothing is left behind on error."""
    import tempfile

    check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        # mkstemp creates the file 0600 and O_EXCL: no umask, no following a planted link.
        fd, partial = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".partial", dir=directory)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            count = write(out)
        check_target(path)  # it may have changed while we wrote
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return count


FORMATS = ("jsonl", "otlp", "har")


def _write_format(out: IO[str], fmt: str, conn: Any, row: Any, frames: Any) -> int:
    """Write the session in ``fmt``; returns how many frames, spans or HAR entries."""
    if fmt == "otlp":
        from mcptape.telemetry.pipeline import OtlpJsonLines
        from mcptape.telemetry.recorded import export_session

        count, _ = export_session(conn, row, OtlpJsonLines(out))
        return count
    if fmt == "har":
        import json

        from mcptape.store.har import session_har

        doc = session_har(conn, row)
        json.dump(doc, out, indent=1, ensure_ascii=False)
        out.write("\n")
        return len(doc["log"]["entries"])
    return write_export(out, frames, row["started_at"])


def _to_receiver(conn: Any, row: Any, url: str) -> None:
    from mcptape.telemetry.pipeline import OtlpHttp
    from mcptape.telemetry.recorded import export_session

    destination = OtlpHttp(url)
    count, ok = export_session(conn, row, destination)
    if not ok:
        why = destination.failure or "it did not accept them"
        raise UserError(
            f"the OTLP receiver at {url} did not take the spans of session {row['id'][:12]}: {why}"
        )
    noun = "span" if count == 1 else "spans"
    click.echo(safe(f"exported {count} {noun} of session {row['id'][:12]} to {url}"), err=True)


@click.command(cls=Command)
@click.argument("session")
@db_option
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default="-",
    help="Write to FILE instead of stdout: a new file readable by you alone, put in place once "
    "complete. An existing FILE must be a regular file (not a symlink or FIFO).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="jsonl (default): one line per frame. otlp: the session's spans and MCP duration "
    "histograms as OTLP JSON lines (one export request a line, as the OpenTelemetry "
    "Collector's file exporter writes; needs mcptape[otel]). har: its HTTP exchanges as "
    "HAR 1.2, for browser devtools.",
)
@otlp_option
def export(session: str, db: str | None, output: str, fmt: str | None, otlp: str | None) -> None:
    """Export a session: as JSONL (one line per frame, its exact text), OTLP or HAR.

    SESSION is a session id, a unique prefix of one, a session name (the
    latest with that name) or `last`. Each line is a JSON object
    {"dir": "c2s"|"s2c", "t": SECONDS_SINCE_START, "frame": "EXACT TEXT"}:
    the direction (client to server or back), the time since the session
    started, and the frame as it was on the wire (a JSON-RPC message in a
    JSON string). "origin": "proxy" marks frames mcptape wrote itself, and
    "raw_b64" holds the exact bytes in base64 for frames that were not valid
    UTF-8. The frames are the recorded text, unchanged: an export can be
    diffed, searched with jq or kept as a test fixture.

    --format otlp gives the spans and metrics `--otlp` sends live (one span
    per exchange, OpenTelemetry's MCP conventions) as OTLP JSON lines;
    --otlp URL posts them to an OTLP/HTTP receiver instead (Jaeger, the
    OpenTelemetry Collector). --format har gives the HTTP requests and
    responses of a session recorded over HTTP (proxy, record --url, call
    over HTTP) as HAR 1.2, which browser devtools and HAR viewers open.

    \b
    Examples:
      mcptape export last > session.jsonl
      mcptape export 3f9a2c -o tests/data/regression.jsonl
      mcptape export everything | jq -r .frame | head
      mcptape export last --format otlp -o session.otlp.jsonl
      mcptape export last --otlp http://localhost:4318
      mcptape export last --format har -o session.har
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import open_for_reading, session_or_error
    from mcptape.store.describe import database_message
    from mcptape.store.queries import connect, session_frames

    if otlp is not None and (fmt not in (None, "otlp") or output != "-"):
        raise UserError(
            "--otlp URL sends the spans to a receiver: give it without -o and without another --format"
        )
    fmt = fmt or ("otlp" if otlp is not None else "jsonl")
    if fmt == "otlp" and otlp is None:
        from mcptape.telemetry import missing_packages

        missing = missing_packages()
        if missing is not None:
            raise UserError(f"--format otlp: {missing}")
    store = open_for_reading(db)
    try:
        with connect(store) as conn:
            row = session_or_error(conn, session)
            if otlp is not None:
                _to_receiver(conn, row, otlp)
                return
            frames = session_frames(conn, row["id"])
            if output == "-":
                with writing_output():
                    _write_format(sys.stdout, fmt, conn, row, frames)
                    sys.stdout.flush()
                return
            count = write_private_file(output, lambda out: _write_format(out, fmt, conn, row, frames))
            one, many = {
                "jsonl": ("frame", "frames"),
                "otlp": ("span", "spans"),
                "har": ("HAR entry", "HAR entries"),
            }[fmt]
            noun = one if count == 1 else many
            click.echo(safe(f"exported {count} {noun} of session {row['id'][:12]} to {output}"), err=True)
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()
