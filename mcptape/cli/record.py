"""`mcptape record`: a transparent stdio recorder in front of one MCP server."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from mcptape.cli.common import UserError, db_option, otlp_option
from mcptape.cli.helptext import Command
from mcptape.cli.replay_options import remote_options
from mcptape.cli.rule_options import (
    declare_option,
    fault_options,
    faults_from_cli,
    rule_options,
    rules_from_cli,
)
from mcptape.cli.upstream_args import remote_upstream, upstream_command


@click.command(
    cls=Command,
    context_settings={"ignore_unknown_options": False},
    summary_options=("--db", "--name", "--upstream", "--config", "--url", "--on-store-error"),
)
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
    "--answer-wait",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="When the client closes its stdin with requests still unanswered, the server (its stdin "
    "closed, as directly) may answer them until it has gone this long without answering or "
    "reporting progress (log lines do not count); then the shutdown above. 0: no wait.",
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
@remote_options("Record a remote MCP server at URL instead of COMMAND (streamable HTTP or legacy SSE).")
@rule_options
@declare_option
@fault_options
@otlp_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
def record(
    db: str | None,
    name: str | None,
    upstream: str | None,
    config_path: str | None,
    grace: float,
    answer_wait: float,
    echo_stderr: bool,
    on_store_error: str,
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
    declare_capabilities: bool,
    fault: tuple[str, ...],
    faults_file: str | None,
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    otlp: str | None,
    command: tuple[str, ...],
) -> None:
    """Run an MCP server over stdio and record every frame between it and the client.

    Put it in front of any stdio server: the client talks to mcptape on stdin and
    stdout exactly as it would to the server, every frame is forwarded unchanged,
    and frames, the server's stderr and its exit land in the database. The server
    starts at once; the database opens in the background.

    \b
    Exit status:
      0      the client left and mcptape stopped a server that did not exit
      N      the server's exit status (128+N: killed by signal N)
      128+N  mcptape itself was stopped by signal N
      2      the server could not be started or the database could not be opened
      1      the server succeeded but recording failed

    \b
    Examples:
      mcptape record -- npx -y @modelcontextprotocol/server-everything
      mcptape record --name fs -- npx -y @modelcontextprotocol/server-filesystem .
      mcptape record --upstream github --config claude_desktop_config.json
      mcptape record --handle-sampling auto -- python server.py
      mcptape record --url http://127.0.0.1:3001/mcp
      mcptape record --otlp http://localhost:4318 -- python server.py

    \f
    The server's exit status is ours also when the client leaves first and the
    server then exits on its own. With --url, a server that cannot be reached at
    all (the connection is refused, the host name does not resolve) is said in one
    line and exits 2, as a server command that cannot start.

    \b
    In a desktop client's config (claude_desktop_config.json), the entry
      {"command": "npx",
       "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    becomes
      {"command": "mcptape",
       "args": ["record", "--name", "files", "--",
                "npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    (`mcptape wrap` does this for every entry, and `mcptape unwrap` undoes it).

    \b
    More examples:
      mcptape record --upstream debug-script
      mcptape record --db team.db --upstream github --config mcp.json
      mcptape record --handle-sampling auto --handle-elicitation decline -- ./srv
      mcptape record --url http://127.0.0.1:3001/mcp \\
          --header 'Authorization: Bearer ${TOKEN}'
      mcptape record --fault 'tools/call=delay:3000,p=0.3,seed=1' -- ./srv
    """
    # Before the heavy imports and the store: a signal from now on stops the session cleanly.
    from mcptape.proxy.early_signals import STOP_SIGNALS, catch_early

    catch_early(STOP_SIGNALS)
    rules = rules_from_cli(handle_sampling, handle_elicitation, roots, inject)
    if declare_capabilities and not rules:
        raise UserError(
            "--declare-capabilities needs rules to declare: --handle-sampling, --handle-elicitation, --roots or --inject"
        )
    faults = faults_from_cli(fault, faults_file)
    import asyncio

    from mcptape.cli.record_run import RecordPlan, run_record

    remote = remote_upstream(url, transport, header_flags, command, upstream, config_path)
    if remote is not None:
        plan = RecordPlan(
            argv=[],
            env=None,
            cwd=None,
            description=remote[0],
            name=name or upstream,
            db=db,
            grace=grace,
            answer_wait=answer_wait,
            on_store_error=on_store_error,
            upstream_link=remote[1],
            transport=remote[2],
            rules=rules,
            declare_capabilities=declare_capabilities,
            faults=faults,
            otlp=otlp,
        )
        sys.exit(_run_within_memory(lambda: asyncio.run(run_record(plan))))
    if transport is not None or header_flags:
        raise UserError("--transport and --header apply to a remote server: give --url URL")
    argv, env, cwd, description = upstream_command(command, upstream, config_path)

    plan = RecordPlan(
        argv=argv,
        env=env,
        cwd=cwd,
        description=description,
        name=name or upstream,
        db=db,
        grace=grace,
        answer_wait=answer_wait,
        echo_stderr=echo_stderr,
        on_store_error=on_store_error,
        rules=rules,
        declare_capabilities=declare_capabilities,
        faults=faults,
        otlp=otlp,
    )
    sys.exit(_run_within_memory(lambda: asyncio.run(run_record(plan))))


def _run_within_memory(run: Callable[[], int]) -> int:
    """``run()``, with a memory limit too small for it said in one line (exit 2), not a traceback.

    Under ``ulimit -v`` of about 80 MB the relay cannot start its reader threads (each
    reserves its stack): record printed a traceback and the client lost its server.
    """
    try:
        return run()
    except MemoryError:
        raise UserError(_memory_message("memory ran out")) from None
    except RuntimeError as exc:
        if "can't start new thread" not in str(exc):
            raise
        raise UserError(_memory_message("a thread could not be started")) from None


def _memory_message(what: str) -> str:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    limit = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"
    return (
        f"{what}: the memory limit (ulimit -v: {limit}) is too small for record; "
        "allow it at least 256 MB (ulimit -v 262144)"
    )
