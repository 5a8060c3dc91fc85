"""`mcptape diff A B`: what changed in a server between two recordings, breaking or compatible.

The comparison is :mod:`mcptape.replay.schema_diff` (pure); this module loads the two
recordings (sessions of the database, or JSONL files written by `mcptape export`) and
prints the report.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.replay_options import comparison_options

if TYPE_CHECKING:
    from mcptape.replay.schema_diff import Change, Report, Snapshot

MARKS = {"added": "+", "removed": "-", "changed": "~", "differs": "~"}


@click.command(cls=Command, summary_options=("--db", "--json", "--fail-on-breaking", "--ignore"))
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--fail-on-breaking",
    is_flag=True,
    help="Exit with status 1 when a change is breaking (for CI); the report is printed either way.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Compare a recording in which the server answered nothing (without this flag, exit 2).",
)
@comparison_options
def diff(
    a: str,
    b: str,
    db: str | None,
    as_json: bool,
    fail_on_breaking: bool,
    allow_empty: bool,
    keep: tuple[str, ...],
    ignore: tuple[str, ...],
    ignore_text: tuple[str, ...],
) -> None:
    """Compare two recordings of a server: its tools, prompts, resources and answers.

    A and B are each a session (an id, a unique prefix of one, a session name
    or `last`: the latest such session in which the client sent a request) or
    a JSONL file written by `mcptape export`. The report lists the
    tools, prompts, resources, resource templates and capabilities added,
    removed or changed between A and B, and the requests both recordings made
    (same method and parameters, `_meta` aside) whose answers differ, with the
    JSON pointers that differ. Answers are compared after the normalisation
    `replay` applies: timestamps, minted ids and UUIDs are left out (--keep puts
    them back, --ignore leaves out more).

    \b
    Each change is classified:
      breaking    a client written against A may fail against B: something
                  removed, a new required argument, an argument's type
                  changed, an output field removed, a request that
                  succeeded in A and fails in B
      compatible  additions and changes of descriptions, titles, annotations
      differs     the same request got a different answer (long texts are
                  shown as a diff of the lines around the change)

    \b
    Exit status: 0; 1 with --fail-on-breaking when a change is breaking; 2 when
    a recording cannot be read or the server answered nothing in it.

    \b
    Examples:
      mcptape diff v1 v2
      mcptape diff tests/recordings/release.jsonl last --fail-on-breaking
      mcptape diff v1 v2 --json | jq '.changes[] | select(.severity=="breaking")'
      mcptape diff v1 v2 --ignore 'tools/call:weather=/result/structuredContent'
    """
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser
    from mcptape.replay.schema_diff import compare

    try:
        normaliser = Normaliser.from_options(keep, ignore, ignore_text)
    except (IgnoreRuleError, ValueError) as exc:
        raise UserError(str(exc)) from None
    first, second = load(a, db), load(b, db)
    empty = next((name for name, snap in (first, second) if snap.empty), None)
    if empty is not None and not allow_empty:
        raise UserError(
            f"{empty} holds no exchange to compare (the server answered no request): a diff with it "
            "would say nothing changed. Name a recording with exchanges, or give --allow-empty"
        )
    report = compare(first[1], second[1], normaliser)
    if as_json:
        import orjson

        from mcptape.terminal import safe_lines

        data = report_json(report, first, second)
        # orjson escapes C0 but not DEL, C1 or bidi controls, which a server's names may
        # carry: escaped too, the JSON means the same and cannot drive a terminal.
        sys.stdout.write(safe_lines(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()) + "\n")
    else:
        from mcptape.terminal import safe

        # Tool names, descriptions and values come from the servers: escaped for the terminal.
        for line in report_lines(report, first, second):
            sys.stdout.write(safe(line) + "\n")
    if fail_on_breaking and report.breaking:
        sys.exit(1)


Loaded = tuple[str, "Snapshot"]  # (how the recording is named in the report, its snapshot)


def load(ref: str, db: str | None) -> Loaded:
    """A recording by session reference or JSONL file path; a UserError when it cannot be read."""
    path = Path(ref)
    if ref.endswith((".jsonl", ".ndjson")) or (path.is_file() and not ref.endswith(".db")):
        return _load_file(path)
    return _load_session(ref, db)


def _load_file(path: Path) -> Loaded:
    import orjson

    from mcptape.replay.schema_diff import snapshot

    def pairs(lines: list[bytes]) -> Iterator[tuple[str, Any]]:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = orjson.loads(line)
                direction, frame = entry["dir"], entry["frame"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise UserError(
                    f"{path}:{number}: not an `mcptape export` line (expected dir and frame)"
                ) from None
            if direction == "s2c" and entry.get("origin") == "proxy":
                continue  # written by mcptape, not the server
            try:
                yield direction, orjson.loads(frame)
            except orjson.JSONDecodeError:
                continue  # a malformed frame says nothing of the server's surface

    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not any(line.strip() for line in lines):
        # Compared, it would show no change at all: --fail-on-breaking must not pass on it.
        raise UserError(f"{path} holds no frames (an empty or cut file?)")
    return str(path), snapshot(pairs(lines))


def _load_session(ref: str, db: str | None) -> Loaded:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import database_message, open_for_reading, session_or_error
    from mcptape.replay.schema_diff import snapshot
    from mcptape.replay.tape import session_label
    from mcptape.store.queries import connect, session_frames

    store = open_for_reading(db)
    try:
        with connect(store) as conn:
            row = session_or_error(conn, ref, replayable=True)

            def pairs() -> Iterator[tuple[str, Any]]:
                for frame in session_frames(conn, row["id"]):
                    meta = frame.meta_dict() or {}
                    if frame.direction == "c2s" and meta.get("forwarded") is False:
                        continue  # the server never saw it (mcptape answered or edited it)
                    if frame.direction == "s2c" and frame.origin == "proxy":
                        continue  # written by mcptape, not the server
                    message = frame.message()
                    if message is not None:
                        yield frame.direction, message

            snap = snapshot(pairs())
            return session_label(row["id"], row["name"], row["mode"], row["started_at"]), snap
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()


def _server(snap: Snapshot) -> str:
    info = snap.server
    if not info:
        return "server unknown"
    return f"server {info.get('name', '?')} {info.get('version', '')}".strip()


def report_lines(report: Report, a: Loaded, b: Loaded) -> Iterator[str]:
    """The report as text lines."""
    from mcptape.replay.showdiff import Repeats, long_text_lines

    yield f"A: {a[0]}, {_server(a[1])}"
    yield f"B: {b[0]}, {_server(b[1])}"
    for label, method in (
        ("tools", "tools/list"),
        ("prompts", "prompts/list"),
        ("resources", "resources/list"),
    ):
        missing = [side for side, snap in (("A", a[1]), ("B", b[1])) if snap.surfaces[method] is None]
        if missing:
            yield f"{label}: not compared ({' and '.join(missing)} never listed them)"
    for change in report.changes:
        yield change_line(change)
        repeats = Repeats()
        for diff in change.pointers:
            where = diff["pointer"] or "/"
            long = long_text_lines(diff.get("a"), diff.get("b"), ("A", "B"))
            earlier = repeats.earlier(where, diff.get("a"), diff.get("b"))
            if earlier is not None:
                yield f"      {where}: the same difference as {earlier}"
            elif long is None:
                yield f"      {where}: {_short(diff, 'a')} -> {_short(diff, 'b')}"
            else:  # two long texts: where they differ, not both cut from their start
                yield f"      {where}: {long[0]}"
                yield from ("        " + line for line in long[1:])
    counts = {
        s: sum(1 for c in report.changes if c.severity == s) for s in ("breaking", "compatible", "differs")
    }
    yield (
        f"{counts['breaking']} breaking, {counts['compatible']} compatible; "
        f"{report.compared} answers compared, {counts['differs'] + _failing(report)} differ"
        + (f"; {report.only_in_a} requests only in A" if report.only_in_a else "")
        + (f"; {report.only_in_b} only in B" if report.only_in_b else "")
    )


def _failing(report: Report) -> int:
    return sum(1 for c in report.changes if c.category == "response" and c.severity == "breaking")


def change_line(change: Change) -> str:
    """One change as a line: mark, severity, what."""
    mark = MARKS.get(change.action, "~")
    subject = f"{change.category} {change.name}: " if change.action in ("changed", "differs") else ""
    return f"  {mark} {change.severity.upper():<10} {subject}{change.what}"


def _short(diff: dict[str, Any], side: str, limit: int = 80) -> str:
    import json

    text = json.dumps(diff[side], ensure_ascii=False) if side in diff else "(absent)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report_json(report: Report, a: Loaded, b: Loaded) -> dict[str, Any]:
    """The report as JSON-ready data."""
    return {
        "a": {"recording": a[0], "server": a[1].server},
        "b": {"recording": b[0], "server": b[1].server},
        "breaking": len(report.breaking),
        "changes": [c.as_dict() for c in report.changes],
        "responses": {
            "compared": report.compared,
            "only_in_a": report.only_in_a,
            "only_in_b": report.only_in_b,
        },
    }
