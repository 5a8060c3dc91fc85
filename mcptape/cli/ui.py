"""`mcptape ui`: the web viewer of the recordings, on loopback, until Ctrl-C."""

from __future__ import annotations

from typing import Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command


@click.command(cls=Command)
@db_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The loopback address to listen on (127.0.0.1, ::1 or localhost).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8809,
    show_default=True,
    help="The port to listen on (0: any free port).",
)
def ui(db: str | None, host: str, port: int) -> None:  # fmt: skip
    """Look at the recordings in a browser: sessions, timelines, frames, compare, SQL.

    Serves a web viewer of the recording database on loopback and prints the
    URL to open, once: the token that logs the browser in is in its fragment
    (after #), which browsers never send, so it appears in no log. Set
    $MCPTAPE_UI_TOKEN to choose the token. Host and Origin are checked on
    every request, and the viewer only reads: it never changes a recording.

    \b
    Pages:
      sessions  every session with its live status, mode, client and server,
                protocol revision, frames and errors; search and filters
      session   a timeline with lanes (client requests, server replies,
                server requests, notifications, stderr and process events),
                zoom (wheel) and brush (drag) to filter the frames below;
                multi-round input_required calls and task polls grouped;
                latency per method (median, p95, histogram); bytes per
                tool result; live while the session records
      frame     the message as a JSON tree, its exact bytes (hex when they
                are not text), HTTP metadata, the request as `mcptape call`
      compare   a replay beside its original (or any two sessions), each
                exchange marked as `mcptape replay` compares it
      sql       read-only queries as `mcptape sql` runs them, the views
                with their columns, CSV download

    \b
    Examples:
      mcptape ui
      mcptape ui --port 0 --db recordings.db
    """
    import asyncio

    from mcptape.cli.sessions import open_for_reading
    from mcptape.gateway.security import is_loopback

    if not is_loopback(host):
        raise UserError(f"--host {host}: the viewer listens on loopback only (127.0.0.1, ::1 or localhost)")
    store = open_for_reading(db)
    try:
        code = asyncio.run(_serve(store, host, port))
    finally:
        store.close()
    if code:
        raise SystemExit(code)


async def _serve(store: Any, host: str, port: int) -> int:
    import asyncio
    import logging
    import os
    import signal

    from aiohttp import web

    from mcptape.gateway.listener import CONNECTION_IDLE_S, one_line_bad_http
    from mcptape.gateway.security import new_token
    from mcptape.terminal import say
    from mcptape.view.app import TOKEN_ENV, Viewer, build_app

    logging.getLogger("aiohttp.server").addFilter(one_line_bad_http)
    viewer = Viewer(store, os.environ.get(TOKEN_ENV) or new_token(), host=host)
    runner = web.AppRunner(
        build_app(viewer), handler_cancellation=True, access_log=None, keepalive_timeout=CONNECTION_IDLE_S
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port, shutdown_timeout=1.0)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        say(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}")
        return 2
    sockets = getattr(site._server, "sockets", None) or []
    viewer.bound(sockets[0].getsockname()[1] if sockets else port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    say(f"viewing {store.where}; open this URL (it holds the token, shown once); Ctrl-C stops")
    click.echo(viewer.url)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        viewer.executor.shutdown(wait=False, cancel_futures=True)
    return 0
