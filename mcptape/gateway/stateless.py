"""2026-07-28 stateless clients through an upstream the gateway runs itself (stdio, or relayed).

A 2026-07-28 client has no session: each request stands alone and may come on any
connection. The gateway serves an entry's stateless requests from a small pool of
sessions, each one upstream process with its relay and its recorded session, instead
of a process per connection: the upstream keeps its state (subscriptions, caches)
across requests and connections, a ``subscriptions/listen`` stream hears what tool calls
made on other connections changed, and the recording holds everything one process
was asked, in order, so it replays as one session.

Ids: two clients may use the same request id at the same moment. Answers are routed
by id, so a request goes to the first session that has no request with its id in
flight, and a new session is started only when every one has (:func:`pick`). A
cancellation goes to the session running the request it names. Pool sessions end
like any other: after the idle timeout (the session row is closed), or at shutdown.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from mcptape.wire.frame import classify_message, encode_id
from mcptape.wire.ids import id_key
from mcptape.wire.protocol import CANCELLED


def _items(message: Any) -> list[Any]:
    return message if isinstance(message, list) else [message]


def request_keys(message: Any) -> set[str]:
    """The id keys (``1`` and ``1.0`` alike) of the requests in a message or batch."""
    keys = set()
    for item in _items(message):
        c = classify_message(item)
        if c.kind == "request" and c.rpc_id is not None:
            keys.add(id_key(c.rpc_id))
    return keys


def cancelled_key(message: Any) -> str | None:
    """The id key of the request a ``notifications/cancelled`` names, if that is what this is."""
    if not isinstance(message, dict) or message.get("method") != CANCELLED:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or "requestId" not in params:
        return None
    return id_key(encode_id(params["requestId"]))


def pick(in_flight: Sequence[Set[str]], message: Any) -> int | None:
    """Which pool session takes ``message``: an index into ``in_flight`` (each session's
    request ids awaiting an answer), or None when a new session is needed."""
    cancelled = cancelled_key(message)
    if cancelled is not None:
        for i, busy in enumerate(in_flight):
            if cancelled in busy:
                return i
    keys = request_keys(message)
    for i, busy in enumerate(in_flight):
        if not keys & busy:
            return i
    return None
