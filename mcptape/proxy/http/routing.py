"""Which HTTP stream a server message goes on, when mcptape runs the HTTP session itself (pure).

Behind streamable HTTP, a stdio upstream's messages have no stream of their own: mcptape
must choose. A response goes on the stream of the POST that carried its request. What
the server sends while requests are in flight (progress, log messages, sampling,
elicitation, roots) belongs on one of those requests' streams: the one whose request
carried the message's progress token, or the one named by related-request metadata,
or the only one open. Everything else goes on the session's GET stream (``None``).
A request the client cancelled (``notifications/cancelled``) is no longer in flight: the
server need not answer it, and what it sends afterwards is not that request's. An answer
that comes all the same goes on the cancelled request's (ended) stream, kept for
``Last-Event-ID`` like any event, never on the GET stream or another request's.

Ids are compared as peers compare them (``1`` and ``1.0`` are one id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcptape.wire.frame import classify_message, encode_id
from mcptape.wire.ids import id_key
from mcptape.wire.protocol import CANCELLED

MAX_CANCELLED = 1024  # cancelled requests remembered for a late answer
RELATED_KEYS = ("io.modelcontextprotocol/related-request-id", "relatedRequestId")


def _items(message: Any) -> Iterable[Any]:
    return message if isinstance(message, list) else (message,)


@dataclass
class OpenStream:
    """A POST's response stream: the requests it carried that await an answer."""

    ids: set[str] = field(default_factory=set)
    progress_tokens: set[str] = field(default_factory=set)


class Router:
    """Tracks open request streams and says where each server message goes."""

    def __init__(self) -> None:
        self.open: dict[str, OpenStream] = {}
        self.cancelled: dict[str, str] = {}  # id key of a cancelled request -> its stream

    def opened(self, stream: str, message: Any) -> bool:
        """A POST carried ``message`` (parsed JSON); True if it holds requests (its stream stays open)."""
        entry = OpenStream()
        for item in _items(message):
            c = classify_message(item)
            if c.kind != "request" or c.rpc_id is None:
                continue
            entry.ids.add(id_key(c.rpc_id))
            params = item.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            if isinstance(meta, dict) and "progressToken" in meta:
                entry.progress_tokens.add(encode_id(meta["progressToken"]))
        if entry.ids:
            self.open[stream] = entry
        return bool(entry.ids)

    def opened_one(self, stream: str, rpc_id: str) -> None:
        """A POST carried one request known only by its id's wire text (nested past any parser)."""
        self.open[stream] = OpenStream({id_key(rpc_id)})

    def route(self, message: Any) -> str | None:
        """The stream for one server message (a batch goes where its first routable item goes)."""
        for item in _items(message):
            found = self._route_one(item)
            if found is not None:
                return found
        return None

    def _route_one(self, item: Any) -> str | None:
        c = classify_message(item)
        if c.kind in ("response", "error") and c.rpc_id is not None:
            key = id_key(c.rpc_id)
            return self._stream_of(key) or self.cancelled.pop(key, None)
        params = item.get("params") if isinstance(item, dict) else None
        if isinstance(params, dict):
            token = params.get("progressToken")
            if token is not None:
                key = encode_id(token)
                for stream, entry in self.open.items():
                    if key in entry.progress_tokens:
                        return stream
            meta = params.get("_meta")
            if isinstance(meta, dict):
                for name in RELATED_KEYS:
                    if name in meta:
                        found = self._stream_of(id_key(encode_id(meta[name])))
                        if found is not None:
                            return found
        if len(self.open) == 1:
            return next(iter(self.open))
        return None

    def _stream_of(self, key: str) -> str | None:
        for stream, entry in self.open.items():
            if key in entry.ids:
                return stream
        return None

    def answered(self, message: Any) -> list[str]:
        """Mark the responses in ``message`` answered; returns the streams now fully answered."""
        done = []
        for item in _items(message):
            c = classify_message(item)
            if c.kind not in ("response", "error") or c.rpc_id is None:
                continue
            key = id_key(c.rpc_id)
            for stream, entry in list(self.open.items()):
                if key in entry.ids:
                    entry.ids.discard(key)
                    if not entry.ids:
                        del self.open[stream]
                        done.append(stream)
                    break
        return done

    def cancel(self, message: Any) -> list[str]:
        """The client cancelled the requests ``message`` names; returns the streams now fully settled."""
        done = []
        for item in _items(message):
            if not isinstance(item, dict) or item.get("method") != CANCELLED:
                continue
            params = item.get("params")
            if not isinstance(params, dict) or "requestId" not in params:
                continue
            key = id_key(encode_id(params["requestId"]))
            for stream, entry in list(self.open.items()):
                if key in entry.ids:
                    entry.ids.discard(key)
                    if len(self.cancelled) >= MAX_CANCELLED:
                        del self.cancelled[next(iter(self.cancelled))]
                    self.cancelled[key] = stream
                    if not entry.ids:
                        del self.open[stream]
                        done.append(stream)
                    break
        return done

    def cut(self, stream: str) -> None:
        """A stream was cut (a fault): answers still due to its requests go on it, ended, for ``Last-Event-ID``."""
        entry = self.open.pop(stream, None)
        for key in entry.ids if entry is not None else ():
            if len(self.cancelled) >= MAX_CANCELLED:
                del self.cancelled[next(iter(self.cancelled))]
            self.cancelled[key] = stream

    def carrier(self, message: Any) -> str | None:
        """The open stream of the client request ``message`` (an answer to it would go there)."""
        for item in _items(message):
            c = classify_message(item)
            if c.kind == "request" and c.rpc_id is not None:
                found = self._stream_of(id_key(c.rpc_id))
                if found is not None:
                    return found
        return None

    def closed(self, stream: str) -> None:
        """A stream went away without all its answers (the client disconnected)."""
        self.open.pop(stream, None)
