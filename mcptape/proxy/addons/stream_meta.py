"""The stream-placement addon: a server frame is put on its client HTTP stream before it is recorded."""

from __future__ import annotations

from mcptape.proxy.flow import Flow
from mcptape.proxy.http.downstream import DownstreamLink


class StreamMeta:
    """Addon, before the recorder: places each server frame on its client stream and records how.

    A stdio upstream's frames carry no HTTP metadata of their own; this gives each the
    downstream stream it went out on. A frame that already has an HTTP upstream's
    metadata keeps it, and the downstream side goes under ``downstream``.
    """

    def __init__(self, link: DownstreamLink) -> None:
        self.link = link

    def frame_done(self, flow: Flow) -> None:
        frame = flow.outgoing
        if frame is None or frame.direction != "s2c" or (frame.meta or {}).get("forwarded") is False:
            return  # not going to the client (mcptape's own replies are never forwarded)
        meta = self.link.place(frame)
        if meta is None:
            return
        old = frame.meta or {}
        frame.meta = {**old, "downstream": meta} if "stream" in old else {**old, **meta}
