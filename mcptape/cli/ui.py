"""`mcptape ui`: the web viewer of the recordings, on loopback, until Ctrl-C."""

from __future__ import annotations

from typing import Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.rule_options import rule_options


@click.command(cls=Command, summary_options=("--db", "--config", "--allow-url", "--port"))
@db_option
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file: its entries (and the built-ins) are what the client page can start.",
)
@click.option(
    "--allow-url",
    "allow_urls",
    multiple=True,
    metavar="PATTERN",
    help="Let the client page connect to URLs matching this shell-style pattern (repeatable; "
    "e.g. 'http://127.0.0.1:*'). Without it the page reaches registry entries only.",
)
@rule_options
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
def ui(
    db: str | None,
    config_path: str | None,
    allow_urls: tuple[str, ...],
    host: str,
    port: int,
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
) -> None:
    """Look at the recordings in a browser, and drive servers by hand from it.

    Serves a web viewer of the recording database on loopback and prints the
    URL to open, once: the token that logs the browser in is in its fragment
    (after #), which browsers never send, so it appears in no log. Set
    $MCPTAPE_UI_TOKEN to choose the token. Host and Origin are checked on
    every request, and the viewer only reads: it never changes a recording.
    The client page starts registry entries only (--config and the built-ins),
    never a command a page names, and reaches a URL only if --allow-url allows
    it; what it does is recorded into the same database (mode client).

    \b
    Examples:
      mcptape ui
      mcptape ui --port 0 --db recordings.db
      mcptape ui --config claude_desktop_config.json --handle-sampling auto

    \f
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
      client    /client?server=NAME: connect to a registry entry, list its
                tools, resources, templates and prompts, call a tool from a
                form made from its inputSchema, watch progress and logs,
                cancel, answer the server's sampling, elicitation and roots
                requests (or let --handle-* rules answer); a recorded request
                opens there to be edited, sent again and compared
    """
    import asyncio

    from mcptape.gateway.security import is_loopback

    if not is_loopback(host):
        raise UserError(f"--host {host}: the viewer listens on loopback only (127.0.0.1, ::1 or localhost)")
    hub = _client_hub(db, config_path, allow_urls, handle_sampling, handle_elicitation, roots, inject)
    store = _open_store(db, create=bool(config_path or allow_urls))
    try:
        code = asyncio.run(_serve(store, host, port, hub))
    finally:
        store.close()
    if code:
        raise SystemExit(code)


def _open_store(db: str | None, create: bool) -> Any:
    """The database to view; created when the client page is set up (it records there), else it must exist."""
    from mcptape.cli.sessions import open_for_reading

    if not create:
        return open_for_reading(db)
    from mcptape.store import StoreError, open_store

    try:
        return open_store(db, create=True)
    except StoreError as exc:
        raise UserError(str(exc)) from None


def _client_hub(
    db: str | None,
    config_path: str | None,
    allow_urls: tuple[str, ...],
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
) -> Any:
    """The client page's registry, URL patterns, rules and roots, from the options (UserError if bad)."""
    from mcptape.cli.rule_options import rules_from_cli
    from mcptape.config.registry import ConfigError, known_upstreams, read_registry
    from mcptape.rules.rules import RuleError, parse_root
    from mcptape.terminal import safe, say
    from mcptape.view.clients import ClientHub

    try:
        registry = known_upstreams(config_path)
        problems = read_registry(config_path).problems if config_path is not None else {}
    except ConfigError as exc:
        raise UserError(str(exc)) from exc
    for problem in problems.values():
        say(f"warning: not offered to the client page: {safe(problem)}")
    # --roots is the page's editable list (not a rule), so that the person can change it.
    rules = rules_from_cli(handle_sampling, handle_elicitation, (), inject)
    try:
        listed = [parse_root(spec) for spec in roots]
    except RuleError as exc:
        raise UserError(str(exc)) from None
    return ClientHub(registry, db=db, allow_urls=allow_urls, rules=rules or None, roots=listed)


async def _serve(store: Any, host: str, port: int, hub: Any = None) -> int:
    import asyncio
    import logging
    import os

    from aiohttp import web

    from mcptape.config.registry import known_upstreams
    from mcptape.gateway.listener import CONNECTION_IDLE_S, one_line_bad_http
    from mcptape.gateway.security import new_token
    from mcptape.proxy.early_signals import STOP_SIGNALS
    from mcptape.terminal import say
    from mcptape.view.app import TOKEN_ENV, Viewer
    from mcptape.view.client_api import client_app
    from mcptape.view.clients import ClientHub

    logging.getLogger("aiohttp.server").addFilter(one_line_bad_http)
    viewer = Viewer(store, os.environ.get(TOKEN_ENV) or new_token(), host=host)
    runner = web.AppRunner(
        client_app(viewer, hub if hub is not None else ClientHub(known_upstreams())),
        handler_cancellation=True,
        access_log=None,
        keepalive_timeout=CONNECTION_IDLE_S,
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
    # SIGHUP too (its terminal closed): the default action left the servers the page
    # started running, and their sessions `running`.
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    say(f"viewing {store.where}; open this URL (it holds the token, shown once); Ctrl-C stops")
    click.echo(viewer.url)
    host_text = f"[{host}]" if ":" in host else host
    say(
        f"the client: http://{host_text}:{viewer.port}/client?server=NAME (a registry entry; the URL above logs in)"
    )
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        viewer.executor.shutdown(wait=False, cancel_futures=True)
    return 0
