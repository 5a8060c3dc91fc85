"""An in-process gateway on a free loopback port, for tests that drive it over real sockets."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web

from mcptape.gateway import listener
from mcptape.gateway.app import Gateway, GatewayConfig


@dataclass
class Running:
    gateway: Gateway
    base: str

    def url(self, name: str, kind: str = "mcp") -> str:
        return f"{self.base}/servers/{name}/{kind}"


@contextlib.asynccontextmanager
async def running_gateway(config: GatewayConfig, send_buffer: int | None = None) -> AsyncIterator[Running]:
    """A started :class:`Gateway` serving ``config`` (port 0: a free one); shut down after the block.

    ``send_buffer``: the kernel's send buffer of every connection (accepted sockets take the
    listener's), so that a slow client is felt at once rather than after megabytes.
    """
    gateway = Gateway(config)
    runner = listener.make_runner(gateway)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind((config.host, 0))
    site = web.SockSite(runner, sock)
    await site.start()
    port = sock.getsockname()[1]
    gateway.bound(port)
    await gateway.start()
    try:
        yield Running(gateway, f"http://127.0.0.1:{port}")
    finally:
        await gateway.shutdown("test")
        await runner.cleanup()
