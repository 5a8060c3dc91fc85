"""Run the gateway: bind, announce the URLs (and a new token, once), serve until a signal, shut down."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from mcptape.gateway.app import Gateway, GatewayConfig
from mcptape.proxy.early_signals import STOP_SIGNALS
from mcptape.proxy.heap import settle_heap
from mcptape.terminal import say as _say

# SIGHUP too: a gateway in a terminal gets it when the terminal closes, and its default
# action left every session row `running` and every upstream that outlives its stdin behind.
SIGNALS = STOP_SIGNALS
CONNECTION_IDLE_S = 60.0  # a connection with no request under way, or one half sent, is closed after it


async def announce_and_wait(lines: list[str], config: GatewayConfig, announce_token: str | None) -> str:
    """Say ``lines``, the new token (once) and "ready", then wait for SIGINT/SIGTERM/SIGHUP; its name.

    What the gateway and ``serve --listen`` print when they listen, and how they stop.
    """
    if announce_token is not None:
        lines = [*lines, f"token (shown once; sent as 'Authorization: Bearer TOKEN'): {announce_token}"]
    elif config.token is None:
        lines = [*lines, "no token required (--no-auth)"]
    _say("\n".join([*lines, "ready; Ctrl-C stops"]))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stopped: list[str] = []
    for signum in SIGNALS:

        def on_signal(signum: int = signum) -> None:
            stopped.append(signal.Signals(signum).name)
            stop.set()

        loop.add_signal_handler(signum, on_signal)
    try:
        await stop.wait()
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
    return stopped[0] if stopped else "stop"


def one_line_bad_http(record: logging.LogRecord) -> bool:
    """A logging filter for ``aiohttp.server``: a request aiohttp could not parse is one line.

    aiohttp answers it 400 and logs a traceback; any client can send one, so a hostile one
    would fill the gateway's stderr with them. Errors in mcptape's handlers keep theirs.
    """
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, HttpProcessingError):
        first = str(exc.message).strip().splitlines()[0] if str(exc.message).strip() else "?"
        record.msg, record.args, record.exc_info = "mcptape: bad HTTP request (400): %s", (first,), None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def make_runner(gateway: Gateway) -> web.AppRunner:
    """The gateway's app, ready to set up, with the connection limits a hostile client meets."""
    server_log = logging.getLogger("aiohttp.server")
    if one_line_bad_http not in server_log.filters:
        server_log.addFilter(one_line_bad_http)
    # handler_cancellation: a client that goes away ends its SSE handler at once.
    # keepalive_timeout: aiohttp's default keeps a connection that has not finished sending a
    # request for an hour, so a client sending its headers a byte a second (slowloris) holds
    # a connection, and a descriptor, that long. Streams being answered are not affected.
    # auto_decompress: aiohttp inflates a request body as it arrives, before any handler
    # (and its size bound) sees it: 1 MB of gzip took the gateway to 1.9 GB. Bodies stay as
    # sent, and a compressed one is refused (read_body).
    return web.AppRunner(
        gateway.app(),
        handler_cancellation=True,
        access_log=None,
        keepalive_timeout=CONNECTION_IDLE_S,
        auto_decompress=False,
    )


async def serve_gateway(
    gateway: Gateway,
    config: GatewayConfig,
    announce_token: str | None,
    describe: Callable[[str], list[str]],
) -> str | None:
    """Listen, announce ``describe(base_url)``, serve until SIGINT/SIGTERM/SIGHUP, shut down.

    Returns what stopped it, or None when it could not listen (said on stderr).
    """
    runner = make_runner(gateway)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, shutdown_timeout=1.0)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        _say(f"error: cannot listen on {config.host}:{config.port}: {exc.strerror or exc}")
        return None
    sockets = getattr(site._server, "sockets", None) or []
    port = sockets[0].getsockname()[1] if sockets else config.port
    gateway.bound(port)
    await gateway.start()
    settle_heap()  # started up: what exists now stays for the gateway's whole life
    host = f"[{config.host}]" if ":" in config.host else config.host
    reason = await announce_and_wait(describe(f"http://{host}:{port}"), config, announce_token)
    _say(f"stopping ({reason}): closing {gateway.session_count()} session(s)")
    # Signals keep coming while sessions close (whoever stopped us may insist): the second
    # gives up waiting for upstreams, the third gives up writing what is left.
    late: list[int] = []
    loop = asyncio.get_running_loop()
    for signum in SIGNALS:
        loop.add_signal_handler(signum, _late_signal, signum, late, gateway)
    try:
        await gateway.shutdown(reason)
        await runner.cleanup()
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
    return reason


def _late_signal(signum: int, late: list[int], gateway: Gateway) -> None:
    """A signal during shutdown: the first gives up waiting, the next gives up writing."""
    late.append(signum)
    name = signal.Signals(signum).name
    if len(late) == 1:
        _say(
            f"{name} again: not waiting for the upstreams any more (killed); writing what was "
            "received and closing the sessions (another signal gives that up too)"
        )
        gateway.give_up()
        return
    _say(f"error: stopped by {name} while writing the recording; what was not written is lost")
    os._exit(128 + signum)


async def run_gateway(config: GatewayConfig, announce_token: str | None) -> int:
    """Serve until SIGINT/SIGTERM/SIGHUP; returns the exit status (0 after a clean shutdown)."""
    gateway = Gateway(config)

    def describe(base: str) -> list[str]:
        lines = [f"gateway listening on {base} (recording into {gateway.store.where()})"]
        for name, spec in config.registry.items():
            lines.append(f"  {name} ({spec.transport}): {base}/servers/{name}/mcp  {base}/servers/{name}/sse")
        return lines

    reason = await serve_gateway(gateway, config, announce_token, describe)
    return 2 if reason is None else 0
