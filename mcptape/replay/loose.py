"""What a server sent while no client request was in flight, and the client message it followed.

A server does not only speak while answering: server-everything sends
``notifications/tools/list_changed`` as soon as the client says
``notifications/initialized``, server-filesystem asks ``roots/list`` then, and a
subscribed resource's ``notifications/resources/updated`` comes whenever it changes. The
tape keeps these outside every exchange (:attr:`Tape.loose`, and server calls without an
exchange); ``mcptape serve`` plays them again after the live client message that came
before them in the recording: the n-th message of the same method (the first
``notifications/initialized``, the second ``tools/call``...), after its answer when it is
a request.

Pure: :func:`anchored` reads a tape; :class:`Anchors` counts the live client's messages.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mcptape.replay.tape import Tape
from mcptape.wire.frame import classify_message

Item = tuple[
    str, Any, float
]  # ("notification", message, ts) or ("call", ServerCall, ts), as Exchange.timeline
Anchor = tuple[str, int]  # (client method, its occurrence from 1)


def anchored(tape: Tape) -> dict[Anchor, list[Item]]:
    """The tape's loose server messages, in recorded order, under the client message before each.

    What the server sent before the client's first message has no anchor and is left out
    (a client has not connected then).
    """
    loose = {id(message) for message in tape.loose}
    calls = {id(call.request): call for call in tape.server_calls if call.exchange is None}
    seen: Counter[str] = Counter()
    anchor: Anchor | None = None
    out: dict[Anchor, list[Item]] = {}
    for frame in tape.frames:
        if frame.direction == "c2s":
            if frame.origin == "proxy":
                continue  # mcptape's own answers and edits: not what the client sent
            for message in frame.messages:
                method = message.get("method")
                if isinstance(method, str) and classify_message(message).kind in ("request", "notification"):
                    seen[method] += 1
                    anchor = (method, seen[method])
            continue
        for message in frame.messages:
            item: Item | None = None
            if id(message) in loose:
                item = ("notification", message, frame.ts)
            elif id(message) in calls:
                item = ("call", calls[id(message)], frame.ts)
            if item is not None and anchor is not None:
                out.setdefault(anchor, []).append(item)
    return out


class Anchors:
    """The live client's messages counted by method: which loose items each one is followed by."""

    def __init__(self, items: dict[Anchor, list[Item]]) -> None:
        self.items = items
        self._seen: Counter[str] = Counter()

    def after(self, messages: list[dict[str, Any]]) -> list[Item]:
        """The items to play after these client messages (one frame's), counting them; [] for none."""
        out: list[Item] = []
        if not self.items:
            return out
        for message in messages:
            method = message.get("method")
            if isinstance(method, str) and classify_message(message).kind in ("request", "notification"):
                self._seen[method] += 1
                out.extend(self.items.get((method, self._seen[method]), ()))
        return out
