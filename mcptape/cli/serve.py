"""`mcptape serve`: a mock MCP server that plays the server side of a recording to a client under test."""

from __future__ import annotations

import sys
from typing import Any

import click

from mcptape.cli.common import UserError, db_option, otlp_option
from mcptape.cli.replay_options import (
    CommandAfterDashes,
    comparison_options,
    load_tapes,
    remote_options,
    remote_server,
    server_command,
    upstream_options,
)


@click.command(
    cls=CommandAfterDashes,
    summary_options=("--db", "--file", "--on-miss", "--strict", "--pace", "--listen"),
)
@click.argument("session", required=False, metavar="[SESSION] [-- COMMAND [ARGS]...]")
@db_option
@click.option(
    "--file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Serve a recording exported as JSONL instead.",
)
@click.option(
    "--on-miss",
    type=click.Choice(["error", "forward"]),
    default="error",
    show_default=True,
    help="A request the recording has no answer for: a JSON-RPC error naming the nearest recorded "
    "requests (error), or forwarded to the real server given after --, by --url or by --upstream, and "
    "recorded (forward).",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 if recorded requests were never asked for, or a request missed."
)
@click.option(
    "--pace",
    default="recorded",
    show_default=True,
    metavar="recorded|fast|FACTOR",
    help="How the messages sent with an answer are spaced: recorded (each gap capped at 1 s), fast "
    "(no gaps), or FACTOR times as fast as recorded. A notification and the answer after it are "
    "always 20 ms apart.",
)
@upstream_options
@remote_options(
    "With --on-miss forward: forward the requests the recording has no answer for to the remote "
    "MCP server at URL (streamable HTTP or legacy SSE) instead of a COMMAND."
)
@comparison_options
@click.option(
    "--record/--no-record",
    "record",
    default=None,
    help="Record the served session (mode serve) in --db. Default: yes, except for a --file without --db.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Serve over HTTP instead of stdio: streamable HTTP at /servers/tape/mcp and legacy SSE at "
    "/servers/tape/sse, each client session played the recording from its start (port 0: any free "
    "port). Only loopback unless --allow-remote.",
)
@click.option(
    "--token-file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="With --listen: where the generated token is written, readable by you alone "
    "(default: serve-token in mcptape's data directory).",
)
@click.option("--no-auth", is_flag=True, help="With --listen: serve without a token (loopback only).")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="With --listen: allow an address other than loopback (anyone who can reach it and has the token "
    "can read the recording).",
)
@otlp_option
@click.pass_context
def serve(
    ctx: click.Context,
    session: str | None,
    db: str | None,
    file: str | None,
    on_miss: str,
    strict: bool,
    pace: str,
    upstream: str | None,
    config_path: str | None,
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    ignore: tuple[str, ...],
    ignore_text: tuple[str, ...],
    keep: tuple[str, ...],
    record: bool | None,
    listen: str | None,
    token_file: str | None,
    no_auth: bool,
    allow_remote: bool,
    otlp: str | None,
) -> None:
    """Play the server side of a recording to an MCP client, over stdio or HTTP.

    SESSION is a session id, a unique prefix, a name or `last` (a name or last:
    the latest such session in which the client sent a request), or --file for
    a JSONL export. Each request is matched by method and parameters
    (normalised as `replay` does: see --keep, --ignore; absent, null and empty
    params are the same), never by id; identical requests get their recorded
    responses in order, after the notifications and server requests that came
    with them, paced as recorded (--pace). A request with no match gets a
    JSON-RPC error naming the nearest recorded requests and the fields that
    differ, or, with --on-miss forward, goes to a real server.

    \b
    Exit status: 0; 1 with --strict when a recorded request was never asked
    for or a request matched nothing; 2 when the recording cannot be read.

    \b
    Examples:
      mcptape serve last
      mcptape serve --file tests/recordings/weather.jsonl --strict
      mcptape serve weather --on-miss forward -- python -m weather_server
      mcptape serve weather --listen 127.0.0.1:8809
    In a client's config: {"command": "mcptape", "args": ["serve", "weather"]}

    \f
    The notifications and the server's own requests (sampling, elicitation)
    that came with a response are sent again first, each server request
    waiting for the client's answer. `initialize` and `server/discover` get
    the recorded answer whatever the client asks. With --on-miss forward a
    request the recording has no answer for goes to a real server (a command
    after --, --url URL or --upstream NAME; one per client session), and its
    answer goes to the client and into the recording.

    With --listen HOST:PORT it serves over streamable HTTP and legacy SSE
    instead, until Ctrl-C, SIGTERM or SIGHUP, as `mcptape proxy` serves an
    upstream: Host and Origin are checked, and requests need a token
    ($MCPTAPE_PROXY_TOKEN, else a new one printed once and written to
    --token-file) unless --no-auth. Each client session is played the
    recording from its start, and recorded as its own session.

    \b
    More examples:
      mcptape serve weather --on-miss forward --url http://127.0.0.1:3001/mcp
      mcptape serve weather --pace fast
    """
    if listen is None:
        # Over stdio, before the heavy imports and the recording is read: a signal from now
        # on stops the session cleanly, as record's does (--listen takes signals once it listens).
        from mcptape.proxy.early_signals import STOP_SIGNALS, catch_early

        catch_early(STOP_SIGNALS)
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser
    from mcptape.replay.pace import parse_pace

    try:
        normaliser = Normaliser.from_options(keep, ignore, ignore_text)
        paced = parse_pace(pace)
    except (IgnoreRuleError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if bool(session) == bool(file):
        raise UserError("give one recording: a SESSION (id, prefix, name or last) or --file FILE")
    remote = remote_server(ctx, url, transport, header_flags, upstream, config_path)
    spec = None if remote else server_command(ctx, upstream, config_path, required=on_miss == "forward")
    if (spec is not None or remote is not None) and on_miss != "forward":
        raise UserError("a server command, --url or --upstream is only used with --on-miss forward")
    if listen is None and (token_file or no_auth or allow_remote):
        raise UserError("--token-file, --no-auth and --allow-remote go with --listen HOST:PORT")
    address = _address(listen, no_auth, allow_remote) if listen is not None else None
    [tape] = load_tapes(db, (session,) if session else (), (file,) if file else ())
    import asyncio

    from mcptape.replay.serving import ServePlan, run_serve

    plan = ServePlan(
        tape=tape,
        db=db,
        record=record if record is not None else bool(session or db),
        strict=strict,
        forward_argv=spec[0] if spec else None,
        forward_env=spec[1] if spec else None,
        forward_cwd=spec[2] if spec else None,
        forward_link=remote[1] if remote else None,
        forward_description=remote[0] if remote else None,
        normaliser=normaliser,
        pace=paced,
        otlp=otlp,
    )
    if address is None:
        sys.exit(asyncio.run(run_serve(plan)))
    sys.exit(_serve_http(plan, address, no_auth, token_file))


def _address(listen: str, no_auth: bool, allow_remote: bool) -> tuple[str, int]:
    from mcptape.cli.proxy import _parse_listen
    from mcptape.gateway.security import is_loopback

    host, port = _parse_listen(listen)
    if not is_loopback(host):
        if not allow_remote:
            raise UserError(
                f"--listen {listen} is not a loopback address; add --allow-remote to serve other machines"
            )
        if no_auth:
            raise UserError("--no-auth works on loopback only; drop it or listen on 127.0.0.1")
        click.echo(
            f"mcptape: warning: listening on {host}: anyone with the token can read the recording", err=True
        )
    return host, port


def _serve_http(plan: Any, address: tuple[str, int], no_auth: bool, token_file: str | None) -> int:
    import asyncio
    import os

    from mcptape.cli.proxy import _write_token
    from mcptape.gateway.security import TOKEN_ENV, new_token
    from mcptape.replay.http_serving import run_serve_http, tape_config

    token: str | None = None
    announce = False
    if not no_auth:
        token = os.environ.get(TOKEN_ENV) or None
        if token is None:
            token, announce = new_token(), True
            if token_file is None:
                import platformdirs

                token_file = os.path.join(
                    platformdirs.user_data_dir("mcptape", appauthor=False), "serve-token"
                )
            _write_token(token, token_file)
    config = tape_config(address[0], address[1], token, plan.db, plan.grace)
    return asyncio.run(run_serve_http(plan, config, token if announce else None))
