"""Frames: one JSON-RPC message exactly as it was on the wire, plus a lazy parsed view.

A frame never changes its bytes. Classification is done with orjson on demand and
cached; a line that is not JSON, or JSON that is not a JSON-RPC message, is
``malformed`` and is still forwarded and recorded as it was.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson

Direction = Literal["c2s", "s2c"]
Origin = Literal["client", "server", "proxy"]
Kind = Literal["request", "notification", "response", "error", "batch", "malformed"]

C2S: Final = "c2s"
S2C: Final = "s2c"
KINDS: Final = ("request", "notification", "response", "error", "batch", "malformed")

_UNPARSED: Final = object()
KEEP_PARSED_BYTES: Final = 1 << 20


def opposite(direction: Direction) -> Direction:
    """The direction a reply to a frame travels in."""
    return "s2c" if direction == "c2s" else "c2s"


def origin_of(direction: Direction) -> Origin:
    """Who wrote a frame that travels in ``direction`` when nobody in the middle did."""
    return "client" if direction == "c2s" else "server"


@dataclass(slots=True)
class Classification:
    """What a frame is: its kind and, where it has them, method and JSON-RPC id.

    ``rpc_id`` is the id re-encoded as compact JSON (``1`` and ``"1"`` stay
    distinct: ``'1'`` versus ``'"1"'``); ``None`` when the frame has no id.
    """

    kind: Kind
    method: str | None = None
    rpc_id: str | None = None


def encode_id(value: Any) -> str:
    """The canonical text of a JSON-RPC id, used to correlate requests and responses."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def classify_message(msg: Any) -> Classification:
    """Classify an already parsed JSON value as a JSON-RPC message."""
    if isinstance(msg, list):
        return Classification("batch") if msg else Classification("malformed")
    if not isinstance(msg, dict):
        return Classification("malformed")
    method = msg.get("method")
    has_id = "id" in msg
    rpc_id = encode_id(msg["id"]) if has_id else None
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


def parse(data: bytes) -> Any:
    """Parse JSON bytes; returns the module-private sentinel on failure (see :func:`classify`).

    orjson refuses integers beyond 64 bits and numbers beyond double range, which are
    valid JSON; the standard library parses those, so a frame is not called malformed
    for carrying one.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return _UNPARSED


def classify(data: bytes) -> tuple[Classification, Any]:
    """Classify wire bytes, returning the classification and the parsed value (or None)."""
    msg = parse(data)
    if msg is _UNPARSED:
        return Classification("malformed"), None
    return classify_message(msg), msg


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
        if self.origin is None:
            self.origin = origin_of(self.direction)

    def _ensure(self) -> Classification:
        if self._cls is None:
            self._cls, msg = classify(self.data)
            # A large frame's parsed value would stay alive, a second copy of it, for as
            # long as the frame waits to be written: parse it again if anyone asks.
            if len(self.data) <= KEEP_PARSED_BYTES:
                self._msg = msg
        return self._cls

    @property
    def kind(self) -> Kind:
        return self._ensure().kind

    @property
    def method(self) -> str | None:
        return self._ensure().method

    @property
    def rpc_id(self) -> str | None:
        return self._ensure().rpc_id

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
        return self.data.decode("utf-8", errors="replace")


def error_response(rpc_id_json: str, code: int, message: str, data: Any = None) -> bytes:
    """A JSON-RPC error response for the request whose id is ``rpc_id_json`` (encoded)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": json.loads(rpc_id_json), "error": error}
    try:
        return orjson.dumps(body)
    except TypeError:  # an id beyond 64 bits
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
