"""An in-process gateway on a free loopback port, for tests that drive it over real sockets."""

from __future__ import annotations

import contextlib
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
async def running_gateway(config: GatewayConfig) -> AsyncIterator[Running]:
    """A started :class:`Gateway` serving ``config`` (port 0: a free one); shut down after the block."""
    gateway = Gateway(config)
    runner = listener.make_runner(gateway)
    await runner.setup()
    site = web.TCPSite(runner, config.host, 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    gateway.bound(port)
    await gateway.start()
    try:
        yield Running(gateway, f"http://127.0.0.1:{port}")
    finally:
        await gateway.shutdown("test")
        await runner.cleanup()
