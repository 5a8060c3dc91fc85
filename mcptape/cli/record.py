"""`mcptape record`: a transparent stdio recorder in front of one MCP server."""

from __future__ import annotations

import shlex
import signal
import sys
from typing import TYPE_CHECKING

import click

from mcptape.cli.common import UserError, db_option

if TYPE_CHECKING:
    from mcptape.proxy.addons import Outcome
    from mcptape.store import Writer


@click.command(context_settings={"ignore_unknown_options": False})
@db_option
@click.option("--name", metavar="NAME", help="Session name (wrap uses the mcpServers entry name).")
@click.option(
    "--upstream",
    metavar="NAME",
    help="Record a registered server instead of COMMAND: a built-in (debug-script, demo) "
    "or an entry of --config.",
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file whose entries --upstream may name.",
)
@click.option(
    "--grace",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="On shutdown, wait this long after closing the server's stdin, then after SIGTERM, before SIGKILL.",
)
@click.option(
    "--echo-stderr/--no-echo-stderr",
    default=True,
    show_default=True,
    help="Copy the server's stderr to ours (desktop clients show it in their logs).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
def record(
    db: str | None,
    name: str | None,
    upstream: str | None,
    config_path: str | None,
    grace: float,
    echo_stderr: bool,
    command: tuple[str, ...],
) -> None:
    """Run an MCP server over stdio and record every frame between it and the client.

    Put it in front of any stdio server: the client talks to mcptape on stdin and
    stdout exactly as it would to the server, every frame is forwarded unchanged,
    and frames, the server's stderr and its exit land in the database. mcptape
    exits with the server's exit status.

    \b
    Examples:
      mcptape record -- npx -y @modelcontextprotocol/server-everything
      mcptape record --name files -- npx -y @modelcontextprotocol/server-filesystem /tmp
      mcptape record --upstream debug-script
      mcptape record --db team.db --upstream github --config claude_desktop_config.json

    \b
    In a desktop client's config (claude_desktop_config.json), the entry
      {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    becomes
      {"command": "mcptape", "args": ["record", "--name", "files", "--",
                                      "npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    (`mcptape wrap` does this for every entry, and `mcptape unwrap` undoes it).
    """
    argv, env, cwd, description = _upstream_command(command, upstream, config_path)

    from mcptape.store import StoreError, open_store

    try:
        store = open_store(db)
        session_id = store.create_session(
            mode="record", name=name or upstream, transport="stdio->stdio", upstream=description
        )
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    writer = store.writer()
    code = 1
    try:
        import asyncio

        code = asyncio.run(_record(writer, session_id, argv, env, cwd, description, name, grace, echo_stderr))
    finally:
        writer.close()
        store.close()
    sys.exit(code)


def _upstream_command(
    command: tuple[str, ...], upstream: str | None, config_path: str | None
) -> tuple[list[str], dict[str, str] | None, str | None, str]:
    if command and upstream:
        raise UserError("give either --upstream NAME or a command after --, not both")
    if upstream:
        from mcptape.config import ConfigError, resolve_upstream

        try:
            spec = resolve_upstream(upstream, config_path)
        except ConfigError as exc:
            raise UserError(str(exc)) from exc
        if spec.transport != "stdio" or not spec.command:
            raise UserError(
                f"upstream {upstream!r} is a remote server ({spec.url}); "
                "record runs stdio servers: give a command after --"
            )
        argv = list(spec.command)
        # An entry `mcptape wrap` rewrote already runs through a recorder: record its
        # server once, not a recorder recording a recorder.
        from mcptape.wrapping import wrapped_split

        split = wrapped_split({"command": argv[0], "args": argv[1:]})
        if split is not None and split[1]:
            argv = split[1]
            return argv, spec.env, spec.cwd, shlex.join(argv)
        return argv, spec.env, spec.cwd, spec.describe()
    if not command:
        raise UserError("no server to record: give the server's command after --, or --upstream NAME")
    return list(command), None, None, shlex.join(command)


async def _record(
    writer: Writer,
    session_id: str,
    argv: list[str],
    env: dict[str, str] | None,
    cwd: str | None,
    description: str,
    name: str | None,
    grace: float,
    echo_stderr: bool,
) -> int:
    import asyncio

    from mcptape.proxy.addons import AddonManager, SessionContext
    from mcptape.proxy.links import open_stdio_link
    from mcptape.proxy.process import ProcessLink, SpawnError
    from mcptape.proxy.recorder import Recorder
    from mcptape.proxy.relay import Relay

    recorder = Recorder(writer, session_id)
    session = SessionContext(session_id, "record", "stdio->stdio", description, name)
    addons = AddonManager([recorder])

    def on_stderr(line: bytes) -> None:
        addons.call_sync("event", session, "stderr", line.decode("utf-8", errors="replace"), None)

    try:
        server = ProcessLink.spawn(argv, env=env, cwd=cwd, on_stderr=on_stderr, echo_stderr=echo_stderr)
    except SpawnError as exc:
        recorder.event(session, "error", str(exc), {"argv": argv})
        writer.update_session(session_id, status="error", error=str(exc), ended_at=_now())
        click.echo(f"mcptape: error: {exc}", err=True)
        return 2
    recorder.event(session, "process_start", description, {"pid": server.pid, "argv": argv, "cwd": cwd})
    client = open_stdio_link()
    relay = Relay(client, server, addons, session, grace=grace)

    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):

        def on_signal(signum: int = signum) -> None:
            stopped_by.append(signum)
            relay.stop(signal.Signals(signum).name)

        loop.add_signal_handler(signum, on_signal)

    outcome = await relay.run()
    return _exit_code(outcome, stopped_by)


def _now() -> float:
    import time

    return time.time()


def _exit_code(outcome: Outcome, stopped_by: list[int]) -> int:
    """Our exit status: the server's when it ended the session, 128+N after signal N, else 0."""
    from mcptape.proxy.process import shell_status

    if outcome.ended_by == "signal" and stopped_by:
        return 128 + stopped_by[0]
    if outcome.ended_by == "server" and outcome.exit_code is not None:
        return shell_status(outcome.exit_code)
    return 0
