"""Two recordings of a server side by side: load each as a snapshot, report the comparison (text, JSON).

The comparison itself is :mod:`mcptape.replay.schema_diff` (pure). This module reads a
recording as a :class:`~mcptape.replay.schema_diff.Snapshot`, from a session of a store
(:func:`session_snapshot`) or a JSONL file written by ``mcptape export``
(:func:`file_snapshot`), and turns a report into lines or JSON-ready data. ``mcptape
diff`` and the ``diff`` tool of ``mcptape mcp`` share it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcptape.replay.schema_diff import Change, Report, Snapshot

MARKS = {"added": "+", "removed": "-", "changed": "~", "differs": "~"}

Loaded = tuple[str, "Snapshot"]  # (how the recording is named in the report, its snapshot)


class DiffInputError(ValueError):
    """A recording that cannot be compared (an unreadable or empty file); ``str()`` is one line."""


def file_snapshot(path: Path) -> Loaded:
    """The snapshot of a JSONL file written by ``mcptape export``; raises DiffInputError."""
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
                raise DiffInputError(
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
        raise DiffInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not any(line.strip() for line in lines):
        # Compared, it would show no change at all: --fail-on-breaking must not pass on it.
        raise DiffInputError(f"{path} holds no frames (an empty or cut file?)")
    return str(path), snapshot(pairs(lines))


def session_snapshot(source: Any, ref: str) -> Loaded:
    """The snapshot of the session ``ref`` names in ``source`` (a store, engine or connection).

    Raises :class:`~mcptape.store.queries.SessionLookupError` (and the database's errors).
    What the server never saw (mcptape answered or edited it) and what mcptape wrote in
    the server's place are left out: the snapshot is the server's own surface.
    """
    from mcptape.replay.schema_diff import snapshot
    from mcptape.replay.tape import session_label
    from mcptape.store.queries import connect, resolve_session, session_frames

    with connect(source) as conn:
        # A name means its latest session that can be compared (one with an exchange).
        row = resolve_session(conn, ref, replayable=True)

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
