"""A small Chrome DevTools Protocol client over one WebSocket (the ``websockets`` library).

Commands are matched to their responses by id; events are queued in arrival
order, which matters: V8 sends ``Debugger.scriptParsed`` for a script before the
``Debugger.paused`` that stops in it, and the session relies on seeing them in
that order. When the socket closes (the inspected process exited), every pending
command fails with :class:`CdpClosed` and :meth:`CdpConnection.next_event`
returns None.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException


class CdpError(Exception):
    """The inspector answered a command with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method} failed: {message} (code {code})")
        self.method = method
        self.code = code


class CdpClosed(Exception):
    """The inspector connection closed before the command was answered."""


@dataclass(frozen=True, slots=True)
class CdpEvent:
    """One event the inspector sent: ``Debugger.paused`` and its parameters."""

    method: str
    params: dict[str, Any]


class CdpConnection:
    """One DevTools Protocol session: send commands, read events in order."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._events: asyncio.Queue[CdpEvent | None] = asyncio.Queue()
        self._closed = False
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str) -> CdpConnection:
        """Open the inspector WebSocket at ``url`` (``ws://127.0.0.1:9229/<uuid>``)."""
        socket = await connect(
            url,
            # Loopback only: an HTTP(S)_PROXY in the environment must not capture it.
            proxy=None,
            # Node's inspector speaks neither permessage-deflate nor answers pings reliably
            # while the script is paused; large script sources and values are normal.
            compression=None,
            ping_interval=None,
            max_size=None,
            open_timeout=None,
        )
        return cls(socket)

    @property
    def closed(self) -> bool:
        """Whether the connection has closed (no further events or responses will arrive)."""
        return self._closed

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command and wait for its result; raise CdpError or CdpClosed."""
        if self._closed:
            raise CdpClosed(f"{method}: the inspector connection is closed")
        message_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = (method, future)
        self._ack_quickly()
        try:
            await self._socket.send(json.dumps({"id": message_id, "method": method, "params": params or {}}))
            return await future
        except WebSocketException as error:
            raise CdpClosed(f"{method}: the inspector connection closed ({error})") from error
        finally:
            self._pending.pop(message_id, None)

    def _ack_quickly(self) -> None:
        # Node's inspector socket has Nagle on, and a response usually follows an
        # event (evaluating compiles a script: scriptParsed first): the response
        # waits for our ACK of the event, which Linux delays up to 40 ms. Quick-ACK
        # mode is not sticky, so it is renewed on every message in and out; a round
        # trip then takes under a millisecond instead of 44.
        sock = self._socket.transport.get_extra_info("socket")
        if sock is not None and hasattr(socket, "TCP_QUICKACK"):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)

    async def next_event(self) -> CdpEvent | None:
        """The next event in arrival order, or None once the connection has closed."""
        if self._closed and self._events.empty():
            return None
        return await self._events.get()

    async def close(self) -> None:
        """Close the socket (the debuggee sees the debugger detach) and stop reading."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._socket.close(), 1.0)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        self._finish()

    async def _read(self) -> None:
        try:
            async for raw in self._socket:
                self._ack_quickly()
                message = json.loads(raw)
                if "id" in message:
                    self._answer(message)
                elif "method" in message:
                    self._events.put_nowait(CdpEvent(message["method"], message.get("params") or {}))
        except (WebSocketException, OSError, ValueError):
            pass
        finally:
            self._finish()

    def _answer(self, message: dict[str, Any]) -> None:
        entry = self._pending.get(message["id"])
        if entry is None:
            return
        method, future = entry
        if future.done():
            return
        if "error" in message:
            error = message["error"]
            future.set_exception(CdpError(method, int(error.get("code", 0)), str(error.get("message", ""))))
        else:
            future.set_result(message.get("result") or {})

    def _finish(self) -> None:
        if self._closed:
            return
        self._closed = True
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(CdpClosed(f"{method}: the inspector connection closed"))
        self._events.put_nowait(None)
