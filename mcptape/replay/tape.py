"""A recorded session as a tape: its frames, and the exchanges they form.

A tape comes from the store (a session reference, as ``show`` resolves it: an id, an
id prefix, a name or ``last``) or from a JSONL file in the format ``mcptape export``
writes. :func:`build_tape` (pure) turns frames into:

- **steps**: the frames the client sent (requests and notifications, in order), each
  with the requests whose responses the recording shows arriving before it, so that a
  player waits for exactly what the client waited for;
- **exchanges**: each client request with its response, the notifications the server
  sent for it (by progress token, else while it was the latest request in flight),
  and the server-initiated requests made meanwhile with the answers they got;
- **server calls**: every server-initiated request with its answer, in order.

Frames mcptape wrote itself (origin ``proxy``) are not steps: an injected answer to a
server request still counts as that request's answer. Two kinds are what the server
received, so a replay sends them: a client frame mcptape edited (its replacement follows
it with the same id: the step sends the replacement) and a request of mcptape's own (id
``"mcptape-N"``, such as the retry of a 2026-07-28 ``input_required`` round: a step and an
exchange of its own, whose ``requestState`` the replay takes from the live server).
"""

from __future__ import annotations

import base64
import fnmatch
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from mcptape.wire.frame import Direction, classify_message, parse
from mcptape.wire.ids import encode_id
from mcptape.wire.ids import id_key as text_key
from mcptape.wire.protocol import CANCELLED, PROGRESS, PROMPTS_GET, TOOLS_CALL

OWN_PREFIX: Final = "mcptape-"  # the ids of mcptape's own requests (Relay.request)


class TapeError(Exception):
    """A recording that cannot be read: ``str()`` is one line for the user."""


def id_key(value: Any) -> str:
    """The correlation key of a JSON-RPC id value: ids peers consider equal (1, 1.0) share it."""
    if type(value) is int:
        return str(value)  # what id_key gives a plain integer's text, without parsing it again
    return text_key(encode_id(value))


@dataclass(slots=True)
class TapeFrame:
    """One recorded frame: where it sits, which way it went, who wrote it, its exact bytes."""

    seq: int
    direction: Direction
    origin: str
    ts: float
    data: bytes
    messages: list[Any] = field(default_factory=list)  # the message, or a batch's elements
    kind: str = "malformed"


_PARSE: Final = object()


def tape_frame(
    seq: int,
    direction: Direction,
    origin: str,
    ts: float,
    data: bytes,
    value: Any = _PARSE,
    kind: str | None = None,
) -> TapeFrame:
    """A tape frame with its messages parsed (a batch is flattened into its elements).

    ``value`` is the frame's parsed JSON when the caller has it already (a relayed
    :class:`~mcptape.wire.frame.Frame` keeps it): the bytes are not parsed again; ``kind``,
    that value's kind when the caller has classified it (a replay classifies each frame
    several times otherwise).
    """
    if value is _PARSE:
        value = parse(data)
    if isinstance(value, list):
        return TapeFrame(seq, direction, origin, ts, data, [m for m in value if isinstance(m, dict)], "batch")
    if isinstance(value, dict):
        return TapeFrame(seq, direction, origin, ts, data, [value], kind or classify_message(value).kind)
    return TapeFrame(seq, direction, origin, ts, data)


def message_kinds(frame: TapeFrame) -> list[tuple[str, Any]]:
    """Each message of a frame with its kind (one message's is the frame's, known already)."""
    if frame.kind != "batch":
        return [(frame.kind, m) for m in frame.messages]
    return [(classify_message(m).kind, m) for m in frame.messages]


def subject_of(method: str | None, params: Any) -> str | None:
    """The tool, prompt or resource a request is about: what ``--ignore METHOD:TOOL=`` scopes to."""
    if not isinstance(params, dict):
        return None
    value = params.get("name") if method in (TOOLS_CALL, PROMPTS_GET) else params.get("uri")
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class ServerCall:
    """A server-initiated request (sampling, elicitation, roots, ping) and the answer it got."""

    request: dict[str, Any]
    answer: dict[str, Any] | None = None
    exchange: int | None = None  # the client exchange it happened during

    @property
    def method(self) -> str | None:
        method = self.request.get("method")
        return method if isinstance(method, str) else None


@dataclass(slots=True)
class Exchange:
    """A client request (numbered from 1 in the order sent), its response, and what came with it."""

    index: int
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    response_data: bytes | None = None  # the response frame's exact bytes (not for a batch)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    server_calls: list[ServerCall] = field(default_factory=list)
    # What the server sent while answering, in order, with when it was recorded:
    # ("notification", message, ts) or ("call", ServerCall, ts).
    timeline: list[tuple[str, Any, float]] = field(default_factory=list)
    response_ts: float | None = None  # when the response was recorded (``serve`` paces by it)

    @property
    def method(self) -> str | None:
        method = self.request.get("method")
        return method if isinstance(method, str) else None

    @property
    def params(self) -> Any:
        return self.request.get("params")

    @property
    def subject(self) -> str | None:
        """The tool, prompt or resource the request is about (``tools/call`` → tool name)."""
        return subject_of(self.method, self.params)

    @property
    def key(self) -> str:
        return id_key(self.request.get("id"))

    def label(self) -> str:
        """``#3 tools/call weather``."""
        subject = f" {self.subject}" if self.subject else ""
        return f"#{self.index} {self.method}{subject}"


@dataclass(slots=True)
class Step:
    """A frame the client sent, and the requests whose responses it waited for first."""

    frame: TapeFrame
    wait_for: tuple[str, ...]
    opens: tuple[int, ...]  # indexes of the exchanges it starts
    # How many of the server's requests the client had answered before it sent this (a
    # server asking roots/list after initialized: the next request waited for that answer).
    answers_before: int = 0


@dataclass
class Tape:
    """A session as exchanges and steps; ``source`` says where it came from, for messages."""

    source: str
    frames: list[TapeFrame]
    exchanges: list[Exchange]
    steps: list[Step]
    server_calls: list[ServerCall]
    session_id: str | None = None
    name: str | None = None
    started_at: float | None = None
    # Notifications the server sent while no client request was in flight (no exchange's).
    loose: list[dict[str, Any]] = field(default_factory=list)


def _progress_token(request: dict[str, Any]) -> bytes | None:
    params = request.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and "progressToken" in meta:
        return orjson.dumps(meta["progressToken"])
    return None


class _Builder:
    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self.steps: list[Step] = []
        self.calls: list[ServerCall] = []
        self.in_flight: dict[str, Exchange] = {}
        self.by_token: dict[bytes, Exchange] = {}
        self.server_pending: dict[str, ServerCall] = {}
        self.answered: list[str] = []
        self.loose: list[dict[str, Any]] = []
        self.answers = 0  # the server's requests the client answered so far

    def add(self, frame: TapeFrame) -> None:
        if frame.direction == "c2s":
            self._client(frame)
        elif frame.kind == "batch":
            for kind, message in message_kinds(frame):
                self._server(kind, message, frame.ts)
        elif frame.messages:
            self._server(frame.kind, frame.messages[0], frame.ts, frame.data)

    def _client(self, frame: TapeFrame) -> None:
        own = False
        if frame.origin == "proxy" and frame.kind == "request":
            if self._replaces_last(frame):
                return
            rid = frame.messages[0].get("id")
            own = isinstance(rid, str) and rid.startswith(OWN_PREFIX)
        opens: list[int] = []
        for kind, message in message_kinds(frame):
            if kind in ("response", "error"):
                call = self.server_pending.pop(id_key(message.get("id")), None)
                if call is not None:
                    call.answer = message
                    self.answers += 1
            elif kind == "notification" and message.get("method") == CANCELLED:
                # A cancelled request is answered by nobody: what the server sends next is
                # not its (it would be attributed to the latest request in flight).
                params = message.get("params")
                cancelled = params.get("requestId") if isinstance(params, dict) else None
                if isinstance(cancelled, (str, int)) and not isinstance(cancelled, bool):
                    self.in_flight.pop(id_key(cancelled), None)
            elif kind == "request" and (frame.origin != "proxy" or own):
                exchange = Exchange(len(self.exchanges) + 1, message)
                self.exchanges.append(exchange)
                self.in_flight[exchange.key] = exchange
                token = _progress_token(message)
                if token is not None:
                    self.by_token[token] = exchange
                opens.append(exchange.index)
        if (frame.origin != "proxy" or own) and frame.kind in ("request", "notification", "batch"):
            self.steps.append(Step(frame, tuple(self.answered), tuple(opens), self.answers))
            self.answered = []

    def _replaces_last(self, frame: TapeFrame) -> bool:
        """Whether ``frame`` is mcptape's edit of the client request just before it (same id).

        It is what the server received: it becomes that step's frame.
        """
        last = self.steps[-1] if self.steps else None
        if (
            last is None
            or last.frame.origin == "proxy"
            or last.frame.kind != "request"
            or len(last.opens) != 1
        ):
            return False
        if self.exchanges[last.opens[0] - 1].request.get("id") != frame.messages[0].get("id"):
            return False
        last.frame = frame
        return True

    def _latest(self) -> Exchange | None:
        return next(reversed(self.in_flight.values()), None)

    def _server(self, kind: str, message: dict[str, Any], ts: float, data: bytes | None = None) -> None:
        if kind in ("response", "error"):
            key = id_key(message.get("id"))
            exchange = self.in_flight.pop(key, None)
            if exchange is not None:
                exchange.response = message
                exchange.response_data = data
                exchange.response_ts = ts
                self.answered.append(key)
        elif kind == "notification":
            owner = None
            params = message.get("params")
            if message.get("method") == PROGRESS and isinstance(params, dict) and "progressToken" in params:
                owner = self.by_token.get(orjson.dumps(params["progressToken"]))
            owner = owner or self._latest()
            if owner is not None:
                owner.notifications.append(message)
                owner.timeline.append(("notification", message, ts))
            else:
                self.loose.append(message)
        elif kind == "request":
            owner = self._latest()
            call = ServerCall(message, exchange=owner.index if owner else None)
            self.calls.append(call)
            self.server_pending[id_key(message.get("id"))] = call
            if owner is not None:
                owner.server_calls.append(call)
                owner.timeline.append(("call", call, ts))


def build_tape(frames: Iterable[TapeFrame], source: str, **info: Any) -> Tape:
    """Exchanges and steps from frames in recorded order (pure)."""
    kept = list(frames)
    builder = _Builder()
    for frame in kept:
        builder.add(frame)
    return Tape(source, kept, builder.exchanges, builder.steps, builder.calls, **info, loose=builder.loose)


# -- loading --------------------------------------------------------------------------


def read_jsonl(path: Path) -> Tape:
    """A tape from a file ``mcptape export`` wrote (one ``{"dir", "t", "frame"}`` per line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TapeError(f"recording file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TapeError(f"cannot read recording file {path}: {exc}") from None
    frames: list[TapeFrame] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("the line is not a JSON object")
            direction = obj["dir"]
            if direction not in ("c2s", "s2c"):
                raise ValueError(f"dir must be c2s or s2c, not {direction!r}")
            if "raw_b64" not in obj and not isinstance(obj["frame"], str):
                raise ValueError(
                    f"frame must be the frame's text (a string), not {type(obj['frame']).__name__}"
                )
            data = base64.b64decode(obj["raw_b64"]) if "raw_b64" in obj else obj["frame"].encode()
            ts = float(obj.get("t", 0.0))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TapeError(
                f"{path}:{number}: not a line of `mcptape export` "
                f'({{"dir": "c2s"|"s2c", "t": SECONDS, "frame": TEXT}}): {exc}'
            ) from None
        origin = obj.get("origin") or ("client" if direction == "c2s" else "server")
        frames.append(tape_frame(len(frames) + 1, direction, origin, ts, data))
    if not frames:
        # Replayed, it would "match" with nothing compared: a CI job must not pass on it.
        raise TapeError(f"recording file {path} holds no frames (an empty or cut file?)")
    return build_tape(frames, str(path), name=path.stem)


def load_session(store: Any, ref: str) -> Tape:
    """A tape from the store: ``ref`` is an id, a unique id prefix, a name or ``last`` (the latest
    such session in which the client sent a request)."""
    from mcptape.store.queries import SessionLookupError, resolve_session, session_frames

    try:
        row = resolve_session(store, ref, replayable=True)
    except SessionLookupError as exc:
        raise TapeError(str(exc)) from None
    frames = [
        tape_frame(f.seq, "c2s" if f.direction == "c2s" else "s2c", f.origin, f.ts, f.data)
        for f in session_frames(store, row["id"])
    ]
    label = session_label(row["id"], row["name"], row["mode"], row["started_at"])
    return build_tape(frames, label, session_id=row["id"], name=row["name"], started_at=row["started_at"])


def session_label(session_id: str, name: str | None, mode: str | None, started_at: float | None) -> str:
    """``session 7f35fb879920 (demo, record, started 2026-11-27 15:16:02)``: which recording a run
    compares against, so that a name that now means another session is seen at once."""
    import time

    details = [d for d in (name, mode) if d]
    if started_at is not None:
        details.append("started " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at)))
    return f"session {session_id[:12]}" + (f" ({', '.join(details)})" if details else "")


def matching_names(store: Any, pattern: str) -> list[str]:
    """Session names matching a shell pattern (``smoke-*``), sorted; replays left unnamed are skipped."""
    from mcptape.store.queries import session_names

    return sorted(n for n in session_names(store) if n and fnmatch.fnmatchcase(n, pattern))


def is_pattern(ref: str) -> bool:
    """Whether a session reference is a name pattern rather than one session."""
    return any(c in ref for c in "*?[")
