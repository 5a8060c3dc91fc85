"""Frames: one JSON-RPC message exactly as it was on the wire, plus a lazy parsed view.

A frame never changes its bytes. Classification is done with orjson on demand and
cached; a line that is not JSON, or JSON that is not a JSON-RPC message, is
``malformed`` and is still forwarded and recorded as it was. Nothing here raises for
what a peer wrote: nesting beyond any parser's depth, numbers beyond 64 bits or double
range, invalid UTF-8 (classified on a lossy decode; the bytes stay exact).

Ids are kept as their exact JSON text (see :class:`Classification`) because orjson
reads integers of 2^64 and above as floats, and a peer expects its id back as it
wrote it. :func:`id_key` says when two id texts name the same request.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson

from mcptape.wire.ids import encode_id, id_key, id_text
from mcptape.wire.jsontext import compact_json, element_spans
from mcptape.wire.scan import TooComplex, scan_members

Direction = Literal["c2s", "s2c"]
Origin = Literal["client", "server", "proxy"]
Kind = Literal["request", "notification", "response", "error", "batch", "malformed"]

C2S: Final = "c2s"
S2C: Final = "s2c"
KINDS: Final = ("request", "notification", "response", "error", "batch", "malformed")

_UNPARSED: Final = object()
KEEP_PARSED_BYTES: Final = 1 << 20

__all__ = [
    "C2S",
    "KINDS",
    "S2C",
    "Classification",
    "Direction",
    "Frame",
    "Kind",
    "Origin",
    "classify",
    "classify_batch",
    "classify_large",
    "classify_message",
    "encode_id",
    "id_key",
    "opposite",
    "origin_of",
    "parse",
]


def opposite(direction: Direction) -> Direction:
    """The direction a reply to a frame travels in."""
    return "s2c" if direction == "c2s" else "c2s"


def origin_of(direction: Direction) -> Origin:
    """Who wrote a frame that travels in ``direction`` when nobody in the middle did."""
    return "client" if direction == "c2s" else "server"


@dataclass(slots=True)
class Classification:
    """What a frame is: its kind and, where it has them, method and JSON-RPC id.

    ``rpc_id`` is the id's JSON text exactly as it was on the wire (``1``, ``1.0``,
    ``"1"`` and ``18446744073709551617`` stay as written; only an object or array
    id, which JSON-RPC does not allow, loses its whitespace outside strings);
    ``None`` when the frame has no id. Compare ids with :func:`id_key`.
    """

    kind: Kind
    method: str | None = None
    rpc_id: str | None = None


def classify_message(msg: Any, rpc_id: str | None = None) -> Classification:
    """Classify an already parsed JSON value as a JSON-RPC message.

    ``rpc_id`` is the id's wire text when the caller knows it; otherwise the parsed
    id is re-encoded, which is exact only for ids orjson reads exactly (use
    :func:`classify` or :func:`classify_batch` on bytes for the wire text).
    """
    if isinstance(msg, list):
        return Classification("batch") if msg else Classification("malformed")
    if not isinstance(msg, dict):
        return Classification("malformed")
    method = msg.get("method")
    has_id = "id" in msg
    if has_id and rpc_id is None:
        rpc_id = encode_id(msg["id"])
    elif not has_id:
        rpc_id = None
    if isinstance(method, str):
        if has_id:
            return Classification("request", method, rpc_id)
        return Classification("notification", method, None)
    if method is not None:
        return Classification("malformed", None, rpc_id)
    if "error" in msg and has_id:
        return Classification("error", None, rpc_id)
    if "result" in msg and has_id:
        return Classification("response", None, rpc_id)
    return Classification("malformed", None, rpc_id)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _lossy(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def parse(data: bytes) -> Any:
    """Parse JSON bytes; returns the module-private sentinel on failure (see :func:`classify`).

    Never raises. orjson refuses numbers beyond double range, lone surrogates and
    nesting deeper than 1024, which are valid JSON: the standard library gets a second
    try (deeper nesting than it can recurse into is then malformed). Invalid UTF-8 is
    parsed on a lossy decode (replacement characters), as servers read it.
    """
    try:
        return orjson.loads(data)
    except Exception:  # whatever a peer wrote, the frame is only "malformed"
        pass
    try:
        return json.loads(_lossy(data), parse_constant=_reject_constant)
    except Exception:  # RecursionError (deep nesting) included
        return _UNPARSED


def _too_deep(data: bytes) -> bool:
    """Whether ``data`` failed to parse only for its nesting (the standard library ran out
    of recursion); asked only of frames no parser accepted."""
    if not data.lstrip(b" \t\n\r").startswith(b"{"):
        return False
    try:
        json.loads(_lossy(data), parse_constant=_reject_constant)
    except RecursionError:
        return True
    except Exception:  # any other fault: malformed for what it is
        return False
    return False


def classify(data: bytes) -> tuple[Classification, Any]:
    """Classify wire bytes, returning the classification and the parsed value (or None).

    Never raises: anything that is not a JSON-RPC message is ``malformed``.
    """
    msg = parse(data)
    if msg is _UNPARSED:
        if _too_deep(data):
            # Valid JSON nested deeper than a parser recurses is still a message: taken
            # for malformed, a deep response left its request pending, and the client got
            # a second answer saying the server never replied.
            found = classify_large(data)
            # An id must be a string or a number: one nested too deep is no id at all.
            if found is not None and (found.rpc_id or " ")[0] not in "[{":
                return found, None
        return Classification("malformed"), None
    try:
        rpc_id = id_text(msg["id"], data) if isinstance(msg, dict) and "id" in msg else None
        return classify_message(msg, rpc_id), msg
    except Exception:  # e.g. an id nested too deep to encode
        return Classification("malformed"), msg


def classify_large(data: bytes) -> Classification | None:
    """Classify a JSON object from its top-level members, without building its value.

    Exact ids and methods, the same kinds as :func:`classify`, at the cost of not
    checking the grammar inside ``params``/``result``/``error`` (see
    :mod:`mcptape.wire.scan`). None for what this does not decide (an array: a batch;
    values too intricate to scan quickly): use :func:`classify`.
    """
    try:
        members = scan_members(data)
    except TooComplex:
        return None
    if members is None:
        stripped = data.lstrip(b" \t\n\r")
        return None if stripped.startswith(b"[") else Classification("malformed")
    found: dict[str, bytes] = {}
    for key, start, end in members:  # the last of duplicate keys wins, as parsers do
        try:
            name = json.loads(_lossy(key)) if b"\\" in key else _lossy(key[1:-1])
        except ValueError:
            return Classification("malformed")
        if name in ("id", "method"):
            found[name] = data[start:end]
        elif name in ("result", "error"):
            found[name] = b""
    try:
        rpc_id = None
        if "id" in found:
            text = _lossy(found["id"])
            rpc_id = text if text[:1] not in ("{", "[") else compact_json(text)
        method: Any = json.loads(_lossy(found["method"])) if "method" in found else None
    except (ValueError, RecursionError):  # an id or method that is not JSON after all
        return Classification("malformed")
    has_id = rpc_id is not None
    if isinstance(method, str):
        return Classification("request", method, rpc_id) if has_id else Classification("notification", method)
    if "method" in found:
        return Classification("malformed", None, rpc_id)
    if "error" in found and has_id:
        return Classification("error", None, rpc_id)
    if "result" in found and has_id:
        return Classification("response", None, rpc_id)
    return Classification("malformed", None, rpc_id)


def classify_batch(data: bytes) -> list[Classification]:
    """Classify each element of a batch frame, with each id's exact wire text.

    Returns an empty list when ``data`` is not a batch. The relay uses it to track
    requests inside batches; :func:`classify_message` on parsed elements would turn
    ids of 2^64 and above into floats.
    """
    msg = parse(data)
    if not isinstance(msg, list) or not msg:
        return []
    text = _lossy(data)
    spans = element_spans(text)
    out = []
    for i, item in enumerate(msg):
        try:
            rpc_id = None
            if isinstance(item, dict) and "id" in item and spans is not None and i < len(spans):
                element = text[spans[i][0] : spans[i][1]]
                rpc_id = id_text(item["id"], element)
            out.append(classify_message(item, rpc_id))
        except Exception:  # one odd element does not hide the others
            out.append(Classification("malformed"))
    return out


@dataclass(slots=True)
class Frame:
    """One JSON-RPC message as it was on the wire.

    ``data`` holds the exact bytes without the transport's framing (for stdio: without
    the trailing newline). ``meta`` carries transport details (HTTP status, headers,
    SSE event id, stream) and is recorded as JSON. ``origin`` says who wrote the
    frame: the client, the server, or mcptape itself (``proxy``: injected answers,
    errors for requests an upstream left pending).
    """

    data: bytes
    direction: Direction
    origin: Origin | None = None
    ts: float = field(default_factory=time.time)
    meta: dict[str, Any] | None = None
    _cls: Classification | None = field(default=None, init=False, repr=False, compare=False)
    _msg: Any = field(default=_UNPARSED, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.origin is None:  # origin_of, inline: this runs for every frame
            self.origin = "client" if self.direction == "c2s" else "server"

    def _ensure(self) -> Classification:
        if self._cls is None:
            if len(self.data) > KEEP_PARSED_BYTES:
                # A large frame is classified from its top level, never built: building
                # a 64 MiB value costs twice that and more, only to be dropped.
                found = classify_large(self.data)
                if found is not None:
                    self._cls = found
                    return found
            self._cls, msg = classify(self.data)
            # A large frame's parsed value would stay alive, a second copy of it, for as
            # long as the frame waits to be written: parse it again if anyone asks.
            if len(self.data) <= KEEP_PARSED_BYTES:
                self._msg = msg
        return self._cls

    # The relay, the recorder and the writer ask these several times a frame: once
    # classified, one attribute look-up each, not a call of _ensure as well.
    @property
    def classification(self) -> Classification:
        """What the frame is (kind, method, id), classified on first use."""
        found = self._cls
        return found if found is not None else self._ensure()

    @property
    def kind(self) -> Kind:
        found = self._cls
        return (found if found is not None else self._ensure()).kind

    @property
    def method(self) -> str | None:
        found = self._cls
        return (found if found is not None else self._ensure()).method

    @property
    def rpc_id(self) -> str | None:
        found = self._cls
        return (found if found is not None else self._ensure()).rpc_id

    @property
    def message(self) -> Any:
        """The parsed JSON value, or None for a frame that is not JSON."""
        self._ensure()
        if self._msg is _UNPARSED:
            msg = parse(self.data)
            return None if msg is _UNPARSED else msg
        return self._msg

    @property
    def size(self) -> int:
        return len(self.data)

    def text(self) -> str:
        """The frame as text; invalid UTF-8 is replaced (the exact bytes stay in ``data``)."""
        return _lossy(self.data)

    def forget_message(self) -> None:
        """Let go of the parsed value (kind, method and id stay): a frame that only waits to be
        written must not hold a second copy of itself (``message`` parses again if asked)."""
        self._msg = _UNPARSED

    def stand_in(self, data: bytes, meta: dict[str, Any] | None) -> Frame:
        """A frame recorded in this one's place (redacted, withheld): other bytes, the same
        direction, origin, time, kind, method and id."""
        other = Frame(data, self.direction, self.origin, self.ts, meta)
        other._cls = self._ensure()
        return other
