"""`mcptape serve`: a mock MCP server that plays the server side of a recording to a client under test."""

from __future__ import annotations

import sys

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.replay import (
    CommandAfterDashes,
    comparison_options,
    load_tapes,
    server_command,
    upstream_options,
)


@click.command(cls=CommandAfterDashes)
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
    "requests (error), or forwarded to the real server given after -- or by --upstream, and recorded (forward).",
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 if recorded requests were never asked for, or a request missed."
)
@upstream_options
@comparison_options
@click.option(
    "--record/--no-record",
    "record",
    default=None,
    help="Record the served session (mode serve) in --db. Default: yes, except for a --file without --db.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    session: str | None,
    db: str | None,
    file: str | None,
    on_miss: str,
    strict: bool,
    upstream: str | None,
    config_path: str | None,
    ignore: tuple[str, ...],
    keep: tuple[str, ...],
    record: bool | None,
) -> None:
    """Play the server side of a recording to an MCP client, over stdio.

    SESSION is a session id, a unique prefix, a name or `last` (or --file for
    a JSONL export). Each request is matched by method and parameters
    (normalised as `replay` does: see --keep, --ignore), never by id;
    identical requests get their recorded responses in order; the
    notifications and the server's own requests (sampling, elicitation) that
    came with a response are sent again first, each server request waiting
    for the client's answer. `initialize` and `server/discover` get the
    recorded answer whatever the client asks. A request with no match gets a
    JSON-RPC error naming the three nearest recorded requests and the fields
    that differ.

    \b
    Exit status: 0; 1 with --strict when a recorded request was never asked
    for or a request matched nothing; 2 when the recording cannot be read.

    \b
    Examples:
      mcptape serve last
      mcptape serve --file tests/recordings/weather.jsonl --strict
      mcptape serve weather --on-miss forward -- python -m weather_server
    In a client's config: {"command": "mcptape", "args": ["serve", "weather"]}
    """
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser

    try:
        normaliser = Normaliser.from_options(keep, ignore)
    except (IgnoreRuleError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if bool(session) == bool(file):
        raise UserError("give one recording: a SESSION (id, prefix, name or last) or --file FILE")
    spec = server_command(ctx, upstream, config_path, required=on_miss == "forward")
    if spec is not None and on_miss != "forward":
        raise UserError("a server command is only used with --on-miss forward")
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
        normaliser=normaliser,
    )
    sys.exit(asyncio.run(run_serve(plan)))
