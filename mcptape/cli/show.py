"""`mcptape show`: one session as a readable timeline, or its frames as NDJSON.

The pure part (``Timeline``) turns frames into lines: it correlates each response with
the request it answers (by the request's direction and id, as ids repeat across
directions); :mod:`mcptape.wire.summaries` says in a few words what a message carries.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import click

from mcptape.cli.common import UserError, db_option, writing_output
from mcptape.cli.helptext import Command
from mcptape.terminal import safe, safe_lines
from mcptape.wire.frame import encode_id
from mcptape.wire.summaries import _dict, compact, count_of, summarize_request, summarize_result

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

    from mcptape.store.queries import StoredEvent, StoredFrame
    from mcptape.store.targets import Target

ARROWS: Final = {"c2s": "→", "s2c": "←"}
EVENT_MARK: Final = "·"
# Short kinds keep the summary, the most telling part, on an 80-column line.
KIND_SHORT: Final = {
    "request": "req",
    "notification": "notif",
    "response": "resp",
    "error": "error",
    "batch": "batch",
    "malformed": "bad",
    "process_start": "start",
    "process_exit": "exit",
    "client_closed": "closed",
}
KIND_WIDTH: Final = 6
TAG_WIDTH: Final = 6
METHOD_WIDTH: Final = 22  # a longer method pushes its summary right rather than being cut


@dataclass(slots=True)
class Line:
    """One timeline line: when, which way, what kind, which method and id, and a summary."""

    ts: float
    mark: str
    kind: str
    method: str
    summary: str
    body: str | None = None  # the whole message, for --full
    tag: str = ""  # in a conversation: which session (the start of its id)


class Timeline:
    """Turns frames into timeline lines, remembering pending requests to name their responses."""

    def __init__(self) -> None:
        self.pending: dict[tuple[str, str], tuple[str, str | None]] = {}

    def _note(self, direction: str, msg: Any) -> None:
        m = _dict(msg)
        if isinstance(m.get("method"), str) and "id" in m:
            name = _dict(m.get("params")).get("name") if m["method"] == "tools/call" else None
            self.pending[(direction, encode_id(m["id"]))] = (
                m["method"],
                name if isinstance(name, str) else None,
            )

    def _answer(self, direction: str, msg: Any) -> tuple[str | None, str | None]:
        m = _dict(msg)
        if "id" not in m:
            return None, None
        request_direction = "s2c" if direction == "c2s" else "c2s"
        return self.pending.pop((request_direction, encode_id(m["id"])), (None, None))

    def frame_line(self, frame: StoredFrame) -> Line:
        """The line for one frame (in sequence order: a response after its request)."""
        msg = _lenient_message(frame) if frame.kind != "malformed" else None
        method = frame.method or ""
        summary = ""
        if msg is None and frame.kind != "malformed":
            # Classified from its top level: nested deeper than any parser here goes.
            method = frame.method or "?"
            summary = f"JSON nested too deep to summarise ({count_of(frame.size, 'byte')})"
        elif frame.kind in ("request", "notification"):
            self._note(frame.direction, msg)
            summary = summarize_request(frame.method, _dict(msg).get("params"))
        elif frame.kind in ("response", "error"):
            request_method, detail = self._answer(frame.direction, msg)
            method = request_method or "?"
            if frame.kind == "error":
                error = _dict(_dict(msg).get("error"))
                data = f" {compact(error['data'])}" if "data" in error else ""
                summary = f"{error.get('code')} {error.get('message')}{data}"
            else:
                summary = summarize_result(request_method, detail, _dict(msg).get("result"))
        elif frame.kind == "batch":
            items = msg if isinstance(msg, list) else []
            for item in items:
                self._note(frame.direction, item)
                self._answer(frame.direction, item)
            methods = [str(_dict(i).get("method") or "response") for i in items]
            more = ", ..." if len(methods) > 8 else ""
            summary = f"batch of {len(items)}: {', '.join(methods[:8])}{more}"
        else:
            summary = f"not JSON-RPC: {frame.text[:80]!r}"
        if frame.rpc_id is not None:
            method = f"{method} #{frame.rpc_id}"
        if frame.origin == "proxy":
            summary = f"[proxy] {summary}"
        return Line(frame.ts, ARROWS.get(frame.direction, "?"), frame.kind, method, summary)


def _lenient_message(frame: StoredFrame) -> Any:
    """The frame's message for a summary, also when only the standard library reads it
    (numbers beyond double range, lone surrogates); None when nothing does."""
    msg = frame.message()
    if msg is not None:
        return msg
    from mcptape.wire.frame import parse

    parsed = parse(frame.text.encode("utf-8", "surrogatepass"))
    return parsed if isinstance(parsed, dict | list) else None


def event_line(event: StoredEvent) -> Line:
    """The line for an event: a stderr line, a process start or exit, an error."""
    from mcptape.store.status import stopped_in

    text = event.text or compact(event.data or "")
    if event.kind == "process_exit" and stopped_in(event.data):
        text += " (by mcptape: the server did not exit after its client left)"
    return Line(event.ts, EVENT_MARK, event.kind, "", text)


def render_line(line: Line, start: float) -> str:
    """A line as text: offset from the session start, the session's tag in a conversation,
    arrow, kind, method and id, summary.

    Everything a recording controls is escaped (:func:`mcptape.terminal.safe`).
    """
    offset = f"{'+' if line.ts >= start else '-'}{abs(line.ts - start):.3f}s"
    kind = KIND_SHORT.get(line.kind, line.kind)
    tag = f" {line.tag}" if line.tag else ""
    if line.method:
        what = f"{safe(kind):<{KIND_WIDTH}} {safe(line.method):<{METHOD_WIDTH}}"
    else:  # an event: its kind (upstream_connect, http_session…) takes the method's room too
        what = f"{safe(kind):<{KIND_WIDTH + 1 + METHOD_WIDTH}}"
    text = f"{offset:>8}{tag} {line.mark} {what} {safe(line.summary)}"
    return text.rstrip()


def merge(frame_lines: Iterator[Line], event_lines: Iterator[Line]) -> Iterator[Line]:
    """Both streams in time order; each keeps its own order, a frame goes first on a tie."""
    event = next(event_lines, None)
    for line in frame_lines:
        while event is not None and event.ts < line.ts:
            yield event
            event = next(event_lines, None)
        yield line
    if event is not None:
        yield event
        yield from event_lines


def header(row: RowMapping, handshake: dict[str, str], label: str) -> list[str]:
    """The session in up to three short lines, most useful first: short id, name and status
    ``label``; the upstream; protocol, client and server. Escaped, not yet cut."""

    def pick(key: str) -> str:
        value = row.get(key) or handshake.get(key)
        return str(value) if value else ""

    first = [f"session {row['id'][:12]}"]
    if row["name"]:
        first.append(row["name"])
    if row.get("replay_of"):
        first.append(f"{row['mode']} of {row['replay_of'][:12]}")
    first.append(label)
    lines = [" · ".join(first)]
    if row["upstream"]:
        lines.append(f"upstream {row['upstream']}")
    peers = []
    if pick("protocol_version"):
        peers.append(f"protocol {pick('protocol_version')}")
    for side in ("client", "server"):
        if pick(f"{side}_name"):
            peers.append(f"{side} {pick(f'{side}_name')} {pick(f'{side}_version')}".rstrip())
    if peers:
        lines.append(" · ".join(peers))
    return [safe(line) for line in lines]


def session_tags(target: Target) -> list[str]:
    """What marks each session's lines in a conversation: the start of its id, long enough
    to tell them apart (and to type: `mcptape show TAG` shows that session alone)."""
    ids = target.session_ids
    width = TAG_WIDTH
    while len({i[:width] for i in ids}) < len(ids) and width < max(len(i) for i in ids):
        width += 2
    return [i[:width] for i in ids]


def conversation_header(target: Target, tags: list[str], labels: list[str]) -> list[str]:
    """A conversation: its id, how many sessions, and a line per session (tag, id, mode,
    replica, status ``labels``). Escaped, not yet cut."""
    what = f"conversation {target.conversation} · {count_of(len(target.sessions), 'session')}"
    if target.seqs is not None:
        exchanges = sum(len(s) for s in target.seqs.values())
        what += f" · {count_of(exchanges, 'frame')} of its exchanges"
    lines = [what]
    for tag, row, label in zip(tags, target.sessions, labels, strict=True):
        parts = [f"{tag} = session {row['id'][:12]}"]
        if row["name"]:
            parts.append(row["name"])
        parts.append(row["mode"])
        if row["replica"]:
            parts.append(f"replica {row['replica']}")
        if row["protocol_version"]:
            parts.append(f"protocol {row['protocol_version']}")
        parts.append(label)
        lines.append("  " + " · ".join(parts))
    return [safe(line) for line in lines]


def frame_json(frame: StoredFrame) -> dict[str, Any]:
    """A frame as one NDJSON object: position, classification, metadata and the parsed message."""
    import base64

    import orjson

    obj: dict[str, Any] = {
        "seq": frame.seq,
        "ts": frame.ts,
        "direction": frame.direction,
        "origin": frame.origin,
        "kind": frame.kind,
        "method": frame.method,
        "id": orjson.Fragment(frame.rpc_id) if frame.rpc_id is not None else None,  # exact, 2**64 too
        "size": frame.size,
        "meta": frame.meta_dict(),
    }
    if frame.kind != "malformed" and frame.message() is not None:
        # The message as written (ids and numbers beyond 64 bits stay exact), not re-encoded.
        obj["message"] = orjson.Fragment(frame.text)
    else:
        obj["text"] = frame.text
    if frame.raw is not None:
        obj["raw_b64"] = base64.b64encode(frame.raw).decode("ascii")
    return obj


def full_body(frame: StoredFrame) -> str:
    """The whole message, pretty-printed and indented under its timeline line."""
    import orjson

    message = frame.message() if frame.kind != "malformed" else None
    text = frame.text if message is None else orjson.dumps(message, option=orjson.OPT_INDENT_2).decode()
    # Split on line feeds only: the other line breaks are escaped on the line they are in.
    return "".join(f"      {safe_lines(line)}\n" for line in text.split("\n"))


@click.command(cls=Command)
@click.argument("session")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the frames as NDJSON, one object per frame.")
@click.option(
    "--events/--no-events",
    default=True,
    show_default=True,
    help="Interleave stderr lines, process start/exit and errors with the frames.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Print every message whole (pretty JSON) under its line; cut nothing. Not with --json, "
    "which always prints messages whole.",
)
def show(session: str, db: str | None, as_json: bool, events: bool, full: bool) -> None:
    """Show one recorded session, or one conversation, as a timeline.

    SESSION is a session id, a unique prefix of one, a session name (the latest
    session with that name) or `last`. The header gives the short id, name
    and status (see `mcptape sessions --help`), the upstream, the protocol
    version, client and server. Each line then gives the time since the
    session started, the direction (→ client to server, ← server to client),
    the kind of message (req, notif, resp, error, batch, bad for a line that
    is not JSON-RPC), its method and JSON-RPC id (a response names the method
    of the request it answers) and a short summary. Lines marked · are
    events: the server's stderr, its start and exit, errors. Answers mcptape
    itself wrote are marked [proxy]. Lines are cut to the terminal's width;
    --full cuts nothing and prints every message whole. Control characters
    in what was recorded are shown escaped (\\u001b), never sent to the
    terminal.

    SESSION may also name a conversation (see the `conversations` view): a
    `conversation_id` that the session rows of several gateway replicas
    share, or a `trace-...` or `client-...` id the view stitched from
    2026-07-28 traffic (then only that conversation's exchanges are shown,
    and the events of their sessions while they ran). The frames of all its
    sessions come merged by time, each line marked with the start of its
    session's id; the header lists the sessions.

    With --json, each frame is printed as one JSON object per line:
    {seq, ts, direction, origin, kind, method, id, size, meta, message} where
    `message` is the parsed JSON, or `text` when the frame is not JSON (and
    `raw_b64` when its bytes are not valid UTF-8); a conversation's frames
    also carry their `session_id`.

    \b
    Examples:
      mcptape show last
      mcptape show 3f9a2c --no-events
      mcptape show everything --full | less
      mcptape show last --json | jq 'select(.kind == "error")'
      mcptape show trace-4bf92f3577b34da6a3ce929d0e0e4736
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.output import cut, json_text, terminal_width
    from mcptape.cli.sessions import open_for_reading, target_or_error
    from mcptape.store.describe import database_message, session_label
    from mcptape.store.queries import connect, session_handshake
    from mcptape.store.targets import target_events, target_frames

    if full and as_json:
        raise UserError("--full and --json do not go together: --json always prints every message whole")
    store = open_for_reading(db)
    try:
        with writing_output(), connect(store) as conn:
            target = target_or_error(conn, session)
            many = target.conversation is not None
            out = sys.stdout
            if as_json:
                import orjson

                for index, frame in target_frames(conn, target):
                    obj = frame_json(frame)
                    if many:
                        obj = {"session_id": target.session_ids[index], **obj}
                    out.write(json_text(orjson.dumps(obj, default=str)) + "\n")
                out.flush()
                return
            width = None if full else terminal_width()
            tags = session_tags(target) if many else [""]
            if many:
                labels = [session_label(store, conn, row) for row in target.sessions]
                head = conversation_header(target, tags, labels)
            else:
                row = target.session
                known = row["protocol_version"] and row["client_name"] and row["server_name"]
                handshake = {} if known else session_handshake(conn, row["id"])
                head = header(row, handshake, session_label(store, conn, row))
            for text in head:
                out.write((cut(text, width) if width else text) + "\n")
            # Ids repeat across sessions: each session's requests are paired on their own.
            timelines = [Timeline() for _ in target.sessions]

            def frame_lines() -> Iterator[Line]:
                for index, frame in target_frames(conn, target):
                    line = timelines[index].frame_line(frame)
                    line.tag = tags[index]
                    if full:
                        line.body = full_body(frame)
                    yield line

            def event_lines() -> Iterator[Line]:
                for index, event in target_events(conn, target) if events else ():
                    line = event_line(event)
                    line.tag = tags[index]
                    yield line

            for line in merge(frame_lines(), event_lines()):
                text = render_line(line, target.started_at)
                out.write((cut(text, width) if width else text) + "\n")
                if line.body:
                    out.write(line.body)
            out.flush()
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()
