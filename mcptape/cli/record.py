"""`mcptape record`: a transparent stdio recorder in front of one MCP server."""

from __future__ import annotations

import shlex
import sys

import click

from mcptape.cli.common import UserError, db_option


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
@click.option(
    "--on-store-error",
    type=click.Choice(["fail", "forward"]),
    default="fail",
    show_default=True,
    help="When the database cannot be opened: stop the session with an error (fail), or keep "
    "forwarding unrecorded and say so on stderr (forward; what `mcptape wrap` writes, so a "
    "desktop client keeps its server).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
def record(
    db: str | None,
    name: str | None,
    upstream: str | None,
    config_path: str | None,
    grace: float,
    echo_stderr: bool,
    on_store_error: str,
    command: tuple[str, ...],
) -> None:
    """Run an MCP server over stdio and record every frame between it and the client.

    Put it in front of any stdio server: the client talks to mcptape on stdin and
    stdout exactly as it would to the server, every frame is forwarded unchanged,
    and frames, the server's stderr and its exit land in the database. The server
    starts at once; the database opens in the background.

    \b
    Exit status: the server's (128+N when it was killed by signal N), also when the
    client leaves first and the server then exits on its own; 0 when the client left
    and mcptape had to stop a server that did not exit after its stdin closed; 128+N
    when mcptape itself was stopped by signal N; 2 when the server cannot be started;
    1 when the server succeeded but recording failed.

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
    import asyncio

    from mcptape.proxy.session import RecordPlan, run_record

    plan = RecordPlan(
        argv=argv,
        env=env,
        cwd=cwd,
        description=description,
        name=name or upstream,
        db=db,
        grace=grace,
        echo_stderr=echo_stderr,
        on_store_error=on_store_error,
    )
    sys.exit(asyncio.run(run_record(plan)))


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
