"""MCP servers and a gateway running in the test's own process, on its event loop, on loopback.

:class:`SdkServerLink` is a server-facing link whose peer is a real `mcp` SDK server
(the built-in demo by default) fed the relay's bytes, as its stdio transport would be:
the relay, the addons and the recorder see a real server without a process.
:class:`InProcessUpstreams` serves such servers to a real :class:`Gateway`, and
:func:`running_gateway` runs that gateway's aiohttp app on a free loopback port with
the listener `mcptape proxy` uses, so requests meet the same guard, routes and sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from aiohttp import web
from mcp.server.mcpserver import MCPServer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from mcptape.assemble import SessionPlan
from mcptape.config.registry import UpstreamSpec
from mcptape.gateway import listener
from mcptape.gateway.app import Gateway, GatewayConfig
from mcptape.gateway.manager import RegistryUpstreams
from mcptape.gateway.store import GatewayStore
from mcptape.proxy.link import Deliver, Ended, EventSink, Link, LinkEnd
from mcptape.proxy.links.memory import MemoryLink

_EOF = b""  # put in the outbox when the relay closes the server's input


def demo_server() -> MCPServer:
    from mcptape.servers.demo import server

    return server


class SdkServerLink(MemoryLink):
    """A server-facing link to an `mcp` SDK server served on the loop, frame by frame.

    Frames the relay sends are parsed as the SDK's stdio transport parses lines; what the
    server writes is serialised as that transport writes it. Closing the link's sending
    side is the server's EOF; the server ending is the link's ``"eof"``.
    """

    def __init__(self, server: MCPServer, name: str = "server") -> None:
        super().__init__("s2c", name)
        self.server = server
        self._task: asyncio.Task[None] | None = None

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        super().start(deliver, ended, event)
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self) -> None:
        to_server, server_reads = create_context_streams[SessionMessage | Exception](0)
        server_writes, from_server = create_context_streams[SessionMessage](0)

        async def inbound() -> None:
            async with to_server:
                while (data := await self._outbox.get()) != _EOF:
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
                    except Exception as exc:  # the stdio transport hands the server the error too
                        await to_server.send(exc)
                        continue
                    await to_server.send(SessionMessage(message))

        async def outbound() -> None:
            async with from_server:
                async for message in from_server:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    with contextlib.suppress(Exception):  # the relay stopped listening
                        await self.peer.send(text)

        lowlevel = self.server._lowlevel_server
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(inbound)
            tasks.start_soon(outbound)
            await lowlevel.run(server_reads, server_writes, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()
        self.peer.close()

    def close_send(self) -> None:
        if not self._send_closed:
            self._outbox.put_nowait(_EOF)
        super().close_send()

    async def aclose(self, grace: float) -> LinkEnd:
        end = await super().aclose(grace)
        if self._task is not None and not self._task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), grace)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return end


@dataclass
class InProcessUpstreams:
    """Gateway upstreams that are SDK servers on the gateway's loop (no process is started).

    ``opened`` lists the names sessions were opened to, in order: a test can tell that a
    request started no server.
    """

    registry: RegistryUpstreams
    servers: dict[str, Callable[[], MCPServer]]
    opened: list[str] = field(default_factory=list)

    def serves(self, name: str) -> bool:
        return name in self.servers

    def passes_through(self, name: str) -> UpstreamSpec | None:
        return None

    def open(self, name: str, downstream: str, forward_auth: str | None) -> tuple[Link, SessionPlan]:
        self.opened.append(name)
        spec = UpstreamSpec(name=name, transport="stdio", command=["in-process", name])
        return SdkServerLink(self.servers[name](), name), self.registry.plan(spec, f"{downstream}->stdio")


@dataclass
class RunningGateway:
    """A gateway listening on loopback in this process; ``base`` is its URL."""

    gateway: Gateway
    port: int
    upstreams: Any

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str, kind: str = "mcp") -> str:
        return f"{self.base}/servers/{name}/{kind}"


@contextlib.asynccontextmanager
async def running_gateway(
    config: GatewayConfig, servers: dict[str, Callable[[], MCPServer]] | None = None
) -> AsyncIterator[RunningGateway]:
    """Run a gateway for ``config`` until the block ends, then shut it down as `mcptape proxy` does.

    With ``servers``, those names are served by in-process SDK servers
    (:class:`InProcessUpstreams`) instead of the config's registry.
    """
    store = GatewayStore(config.db, config.redact_paths)
    upstreams = None if servers is None else InProcessUpstreams(RegistryUpstreams(config, store), servers)
    gateway = Gateway(config, upstreams=upstreams, store=store)
    runner = listener.make_runner(gateway)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
    gateway.bound(port)
    await gateway.start()
    try:
        yield RunningGateway(gateway, port, gateway.upstreams)
    finally:
        await gateway.shutdown("the test ended")
        await runner.cleanup()


class GatewayThread:
    """:func:`running_gateway` on a thread of its own, for blocking clients (http.client, the SDK's).

    ``base``, :meth:`url` and :meth:`stop` are those of the process helper
    (:class:`tests.helpers.gateway_proc.GatewayProcess`), so a test reads the same.
    """

    def __init__(
        self, config: GatewayConfig, servers: dict[str, Callable[[], MCPServer]] | None = None
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.running: RunningGateway | None = None
        self._thread = threading.Thread(target=self._run, args=(config, servers), daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self.running is None:
            self.stop()
            raise RuntimeError(f"the in-process gateway did not start: {self._error!r}")
        self.base = self.running.base
        self.gateway = self.running.gateway

    def _run(self, config: GatewayConfig, servers: dict[str, Callable[[], MCPServer]] | None) -> None:
        async def main() -> None:
            self._stopping = asyncio.Event()
            async with running_gateway(config, servers) as running:
                self.running = running
                self._ready.set()
                await self._stopping.wait()

        try:
            self._loop.run_until_complete(main())
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()
            self._loop.close()

    @property
    def upstreams(self) -> Any:
        assert self.running is not None
        return self.running.upstreams

    def url(self, name: str, kind: str = "mcp") -> str:
        return f"{self.base}/servers/{name}/{kind}"

    def stop(self) -> None:
        """Shut the gateway down (sessions closed, the store flushed) and wait for the thread."""
        if self._thread.is_alive() and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(30)
        if self._error is not None:
            raise self._error
