"""`mcptape replay`: re-drive a live server with recorded client frames and compare what comes back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.rule_options import rule_options, rules_from_cli

if TYPE_CHECKING:
    from mcptape.replay.run import Replayed
    from mcptape.replay.tape import Tape

COMMAND_KEY = "mcptape.command"


class CommandAfterDashes(click.Command):
    """A command whose arguments after ``--`` are a server command line, kept apart from the rest."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[COMMAND_KEY] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


def server_command(
    ctx: click.Context,
    upstream: str | None,
    config_path: str | None,
    *,
    required: bool = True,
    url_ok: bool = False,
) -> tuple[list[str], dict[str, str] | None, str | None, str] | None:
    """The server to start: the command after ``--`` or a registered ``--upstream``."""
    command = tuple(ctx.meta.get(COMMAND_KEY, ()))
    if not command and not upstream:
        if not required:
            return None
        raise UserError(
            "no server to replay against: give its command after --, --url URL or --upstream NAME"
        )
    from mcptape.cli.record import _upstream_command

    return _upstream_command(command, upstream, config_path)


def upstream_options(func: Any) -> Any:
    """``--upstream NAME`` and ``--config FILE``, as ``record`` takes them."""
    func = click.option(
        "--config",
        "config_path",
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="An mcpServers config file whose entries --upstream may name.",
    )(func)
    return click.option(
        "--upstream",
        metavar="NAME",
        help="Start a registered server (a built-in or an entry of --config) instead of COMMAND.",
    )(func)


def remote_options(func: Any) -> Any:
    """``--url``, ``--transport`` and ``--header``, as ``record`` takes them."""
    func = click.option(
        "--header",
        "header_flags",
        multiple=True,
        metavar="'NAME: VALUE'",
        help="An HTTP header sent to --url (repeatable; ${ENV} in the value is expanded). "
        "Credentials are redacted in the recording.",
    )(func)
    func = click.option(
        "--transport",
        type=click.Choice(["http", "sse", "auto"]),
        default=None,
        help="How to reach --url: streamable HTTP, legacy HTTP+SSE, or auto (try streamable HTTP, "
        "fall back to SSE). Default: auto, or the --upstream entry's type.",
    )(func)
    return click.option(
        "--url",
        metavar="URL",
        help="Replay against a running remote MCP server at URL (streamable HTTP or legacy SSE) "
        "instead of starting COMMAND.",
    )(func)


def remote_server(
    ctx: click.Context,
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    upstream: str | None,
    config_path: str | None,
) -> tuple[str, Any, str] | None:
    """(redacted URL, link factory, transport) for --url or a remote --upstream entry; None for a command."""
    from mcptape.cli.record import _remote_upstream

    command = tuple(ctx.meta.get(COMMAND_KEY, ()))
    remote = _remote_upstream(url, transport, header_flags, command, upstream, config_path)
    if remote is None and (transport is not None or header_flags):
        raise UserError("--transport and --header apply to a remote server: give --url URL")
    if remote is None:
        return None
    description, factory, session_transport = remote
    return description, factory, session_transport.split("->", 1)[-1]


def comparison_options(func: Any) -> Any:
    """``--ignore`` and ``--keep``: what is left out of the comparison."""
    func = click.option(
        "--keep",
        multiple=True,
        type=click.Choice(["meta", "ids", "timestamps"]),
        help="Compare what is normalised away by default: _meta members (meta), ids and tokens the "
        "server mints such as requestState, cursors and UUIDs (ids), ISO dates and time fields "
        "(timestamps). Repeatable.",
    )(func)
    return click.option(
        "--ignore",
        multiple=True,
        metavar="[METHOD[:TOOL]=]POINTER",
        help="Leave a JSON Pointer out of the comparison; * matches any member or element; scope it to a "
        "method or a tool (tools/call:weather=/result/structuredContent/humidity); METHOD=/ drops that "
        "method's notifications altogether. Repeatable.",
    )(func)


def load_tapes(db: str | None, refs: tuple[str, ...], files: tuple[str, ...]) -> list[Tape]:
    """The recordings to replay: session references or name patterns from the store, then files."""
    from mcptape.replay.tape import TapeError, is_pattern, load_session, matching_names, read_jsonl

    tapes: list[Tape] = []
    if refs:
        from sqlalchemy.exc import SQLAlchemyError

        from mcptape.cli.sessions import database_message, open_for_reading

        store = open_for_reading(db)
        try:
            for ref in refs:
                names = matching_names(store, ref) if is_pattern(ref) else [ref]
                if not names:
                    raise UserError(
                        f"no session name matches the pattern {ref!r} (`mcptape sessions` lists them)"
                    )
                for name in names:
                    tapes.append(load_session(store, name))
        except TapeError as exc:
            raise UserError(str(exc)) from None
        except SQLAlchemyError as exc:
            raise UserError(f"cannot read the recording: {database_message(exc)}") from None
        finally:
            store.close()
    for file in files:
        try:
            tapes.append(read_jsonl(Path(file)))
        except TapeError as exc:
            raise UserError(str(exc)) from None
    return tapes


@click.command(cls=CommandAfterDashes)
@click.argument("sessions", nargs=-1, metavar="[SESSION|PATTERN]... [-- COMMAND [ARGS]...]")
@db_option
@click.option(
    "--file",
    "files",
    multiple=True,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Replay a recording exported as JSONL (`mcptape export`). Repeatable.",
)
@upstream_options
@remote_options
@comparison_options
@rule_options
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0.01),
    metavar="SECONDS",
    help="How long to wait for each response before reporting it missing.",
)
@click.option("--report", metavar="FILE", help="Write the comparison as JSON to FILE.")
@click.option("--junit", metavar="FILE", help="Write JUnit XML to FILE: one test case per exchange.")
@click.option(
    "--update",
    is_flag=True,
    help="Make each replay the new reference: a session's name moves to its replay, a --file is rewritten.",
)
@click.option(
    "--record/--no-record",
    "record",
    default=None,
    help="Record the replay as a session (mode replay) in --db. Default: yes, except when every "
    "recording is a --file and no --db is given.",
)
@click.option(
    "--grace",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="At the end, wait this long after closing the server's stdin, then after SIGTERM, before SIGKILL.",
)
@click.option(
    "--echo-stderr/--no-echo-stderr",
    default=False,
    show_default=True,
    help="Copy the server's stderr to ours (it is recorded either way).",
)
@click.pass_context
def replay(
    ctx: click.Context,
    sessions: tuple[str, ...],
    db: str | None,
    files: tuple[str, ...],
    upstream: str | None,
    config_path: str | None,
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    ignore: tuple[str, ...],
    keep: tuple[str, ...],
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
    timeout: float,
    report: str | None,
    junit: str | None,
    update: bool,
    record: bool | None,
    grace: float,
    echo_stderr: bool,
) -> None:
    """Re-drive a live server with recorded client frames and compare its responses.

    SESSION is a session id, a unique prefix, a name (the latest session with
    it) or `last`; a PATTERN (smoke-*) takes the latest session of every
    matching name; --file takes JSONL exports. Each recording is replayed
    against a fresh server (a new process, or a new session with the server
    at --url): the client's frames are sent in order, exactly as
    recorded, waiting where the client waited; the server's own requests
    (sampling, elicitation, roots) are answered from the recording; a
    2026-07-28 retry echoes the requestState the live server gives.

    Responses, their notifications (in any order) and server requests are
    compared after normalisation (see --keep, --ignore); a redacted value in
    the recording matches anything. Each differing exchange is printed with
    the method, tool, JSON Pointer and both values, then a summary line.

    The replay is recorded as a new session (mode replay) whose replay_of is
    the original.

    \b
    Exit status: 0 when every exchange matches, 1 when some differ, 2 when a
    replay could not run (recording not found, server would not start).

    \b
    Examples:
      mcptape replay last -- python -m my_server
      mcptape replay smoke-* --junit report.xml -- npx -y @modelcontextprotocol/server-everything
      mcptape replay --file tests/recordings/weather.jsonl --upstream weather --config mcp.json
      mcptape replay weather --url http://127.0.0.1:3001/mcp --header 'Authorization: Bearer ${TOKEN}'
      mcptape replay weather --ignore 'tools/call:weather=/result/content/*/annotations' -- ./server
      mcptape replay weather --update -- ./server     # the change was intended
    """
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser

    try:
        normaliser = Normaliser.from_options(keep, ignore)
    except (IgnoreRuleError, ValueError) as exc:
        raise UserError(str(exc)) from None
    rules = rules_from_cli(handle_sampling, handle_elicitation, roots, inject)
    remote = remote_server(ctx, url, transport, header_flags, upstream, config_path)
    argv: list[str] = []
    env: dict[str, str] | None = None
    cwd: str | None = None
    if remote is not None:
        description = remote[0]
    else:
        spec = server_command(ctx, upstream, config_path, url_ok=True)
        assert spec is not None
        argv, env, cwd, description = spec
    if not sessions and not files:
        raise UserError(
            "nothing to replay: give a SESSION (id, prefix, name, pattern or last) or --file FILE"
        )
    tapes = load_tapes(db, sessions, files)
    from mcptape.replay.run import ReplayPlan

    plan = ReplayPlan(
        argv=argv,
        env=env,
        cwd=cwd,
        description=description,
        db=db,
        record=record if record is not None else bool(sessions or db),
        normaliser=normaliser,
        timeout=timeout,
        grace=grace,
        echo_stderr=echo_stderr,
        rules=rules,
        upstream_link=remote[1] if remote is not None else None,
        transport=remote[2] if remote is not None else "stdio",
    )
    sys.exit(_run(tapes, plan, files, report, junit, update))


def _run(
    tapes: list[Tape], plan: Any, files: tuple[str, ...], report: str | None, junit: str | None, update: bool
) -> int:
    import asyncio
    import json

    from mcptape.replay.compare import format_session, report_json, report_junit, summary_line
    from mcptape.replay.run import replay_tape

    async def main() -> list[Replayed]:
        done = []
        for tape in tapes:
            click.echo(f"mcptape: replaying {tape.source} ({len(tape.exchanges)} exchanges)", err=True)
            replayed = await replay_tape(tape, plan)
            done.append(replayed)
            if replayed.interrupted_by is not None:
                break
        return done

    outcomes = asyncio.run(main())
    results = [o.result for o in outcomes]
    for result in results:
        for line in format_session(result):
            click.echo(line)
    click.echo(summary_line(results))
    writes = []
    if report:
        writes.append((report, json.dumps(report_json(results), indent=2) + "\n"))
    if junit:
        writes.append((junit, report_junit(results)))
    for path, text in writes:
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    if update:
        _update(tapes, outcomes, plan.db)
    stopped = next((o.interrupted_by for o in outcomes if o.interrupted_by is not None), None)
    if stopped is not None:
        return 128 + stopped
    if any(r.error for r in results):
        return 2
    return 1 if any(r.failed for r in results) else 0


def _update(tapes: list[Tape], outcomes: list[Replayed], db: str | None) -> None:
    """--update: each replay that ran becomes the reference of its recording."""
    from mcptape.replay.run import write_jsonl

    store = None
    try:
        for tape, outcome in zip(tapes, outcomes, strict=False):
            if outcome.result.error:
                continue
            if tape.session_id is None:
                write_jsonl(Path(tape.source), outcome.frames)
                click.echo(f"mcptape: updated {tape.source}", err=True)
            elif outcome.result.replay_id is not None and tape.name:
                if store is None:
                    from mcptape.store import open_store

                    store = open_store(db)
                store.update_session(tape.session_id, name=None)
                store.update_session(outcome.result.replay_id, name=tape.name)
                click.echo(
                    f"mcptape: the name {tape.name!r} now refers to the replay {outcome.result.replay_id[:12]}",
                    err=True,
                )
    except OSError as exc:
        raise UserError(f"cannot update the recording: {exc}") from None
    finally:
        if store is not None:
            store.close()
