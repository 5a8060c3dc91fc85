"""`mcptape replay`: re-drive a live server with recorded client frames and compare what comes back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from mcptape.cli.rule_options import rule_options, rules_from_cli

if TYPE_CHECKING:
    from mcptape.replay.run import Replayed
    from mcptape.replay.tape import Tape


@click.command(
    cls=CommandAfterDashes,
    summary_options=(
        "--db",
        "--file",
        "--upstream",
        "--url",
        "--ignore",
        "--ignore-text",
        "--update",
        "--junit",
    ),
)
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
@remote_options()
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
    "--allow-empty",
    is_flag=True,
    help="Replay a recording in which the client sent no request (it compares nothing: "
    "without this flag, exit 2).",
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
@otlp_option
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
    ignore_text: tuple[str, ...],
    keep: tuple[str, ...],
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
    timeout: float,
    report: str | None,
    junit: str | None,
    update: bool,
    allow_empty: bool,
    record: bool | None,
    grace: float,
    echo_stderr: bool,
    otlp: str | None,
) -> None:
    """Re-drive a live server with recorded client frames and compare its responses.

    SESSION is a session id, a unique prefix, a name or `last` (a name or last:
    the latest such session in which the client sent a request); a PATTERN
    (smoke-*) takes the latest session of every matching name; --file takes
    JSONL exports. Each recording is replayed against a fresh server, and its
    responses, notifications and server requests are compared after
    normalisation (see --keep, --ignore). The first line names the recording
    compared against; each differing exchange is printed with the request,
    its arguments, the JSON Pointer and both values (long texts as a diff).

    \b
    Exit status: 0 when every exchange matches (or --update made the replay
    the reference), 1 when some differ, 2 when a replay could not run
    (recording not found or with no exchange, server would not start),
    128+N when stopped by signal N (the rest reported `not replayed`).

    \b
    Examples:
      mcptape replay last -- python -m my_server
      mcptape replay smoke-* --junit report.xml -- node server.js
      mcptape replay --file tests/recordings/weather.jsonl -- ./server
      mcptape replay weather --url http://127.0.0.1:3001/mcp
      mcptape replay weather --update -- ./server     # the change was intended

    \f
    Each recording is replayed against a fresh server (a new process, or a
    new session with the server at --url): the client's frames are sent in
    order, exactly as recorded, waiting where the client waited; the server's
    own requests (sampling, elicitation, roots) are answered from the
    recording; a 2026-07-28 retry echoes the requestState the live server
    gives. Notifications are compared in any order; a redacted value in the
    recording matches anything. The replay is recorded as a new session (mode
    replay) whose replay_of is the original.

    \b
    More examples:
      mcptape replay smoke-* --junit report.xml \\
          -- npx -y @modelcontextprotocol/server-everything
      mcptape replay --file weather.jsonl --upstream weather --config mcp.json
      mcptape replay weather --url http://127.0.0.1:3001/mcp \\
          --header 'Authorization: Bearer ${TOKEN}'
      mcptape replay weather \\
          --ignore 'tools/call:weather=/result/content/*/annotations' -- ./server
    """
    # Before the heavy imports and the server: a signal from now on stops the replay cleanly.
    from mcptape.proxy.early_signals import STOP_SIGNALS, catch_early

    catch_early(STOP_SIGNALS)
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser

    try:
        normaliser = Normaliser.from_options(keep, ignore, ignore_text)
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
    _check_outputs(report, junit)
    tapes = load_tapes(db, sessions, files)
    empty = next((tape for tape in tapes if not tape.exchanges), None)
    if empty is not None and not allow_empty:
        raise UserError(
            f"{empty.source} holds no exchange to compare (its client sent no request): a replay of it "
            "would test nothing. Name a session with exchanges (`mcptape sessions` lists their frames), "
            "or give --allow-empty"
        )
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
        otlp=otlp,
        signals=STOP_SIGNALS,
    )
    sys.exit(_run(tapes, plan, files, report, junit, update))


def _check_outputs(report: str | None, junit: str | None) -> None:
    """A report path that cannot be written is said before the replay runs, not after it."""
    import os

    if report and junit and Path(report).resolve() == Path(junit).resolve():
        raise UserError(f"--report and --junit name the same file {report}: one would overwrite the other")
    for flag, path in (("--report", report), ("--junit", junit)):
        if not path:
            continue
        target = Path(path)
        parent = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            raise UserError(f"{flag} {path} is a directory; name a file in it")
        if not parent.is_dir():
            raise UserError(f"{flag} {path}: the directory {parent} does not exist")
        if not os.access(target if target.exists() else parent, os.W_OK):
            raise UserError(f"{flag} {path}: permission denied")


def _run(
    tapes: list[Tape], plan: Any, files: tuple[str, ...], report: str | None, junit: str | None, update: bool
) -> int:
    import asyncio
    import json

    from mcptape.replay.compare import format_session, report_json, report_junit, summary_line
    from mcptape.replay.run import replay_tape
    from mcptape.terminal import safe

    async def main() -> list[Replayed]:
        done = []
        for tape in tapes:
            click.echo(safe(f"mcptape: replaying {tape.source}: {len(tape.exchanges)} exchanges"), err=True)
            replayed = await replay_tape(tape, plan)
            done.append(replayed)
            if replayed.interrupted_by is not None:
                break
        return done

    outcomes = asyncio.run(main())
    results = [o.result for o in outcomes]
    for result in results:
        # Method and tool names and values come from the recording and the server.
        for line in format_session(result):
            click.echo(safe(line))
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
    updated = _update(tapes, outcomes, plan.db) if update else set()
    from mcptape.proxy.early_signals import take_early

    stopped = next((o.interrupted_by for o in outcomes if o.interrupted_by is not None), None)
    late = take_early()  # while the report was written
    if stopped is None and late:
        stopped = late[0]
    if stopped is not None:
        click.echo(_stopped_line(stopped, results, len(tapes) - len(outcomes)), err=True)
        return 128 + stopped
    if any(r.error for r in results):
        return 2
    # A recording --update made the replay's reference is no failure: the change was intended.
    return 1 if any(r.failed and id(r) not in updated for r in results) else 0


def _stopped_line(signum: int, results: list[Any], not_run: int) -> str:
    """What a signal left undone, in one line."""
    import signal

    undone = []
    skipped = sum(r.not_replayed for r in results)
    if skipped:
        undone.append(f"{skipped} exchange(s) not replayed")
    if not_run:
        undone.append(f"{not_run} recording(s) not replayed")
    what = f": the replay is incomplete ({', '.join(undone)})" if undone else ""
    return f"mcptape: stopped by {signal.Signals(signum).name}{what}"


def _update(tapes: list[Tape], outcomes: list[Replayed], db: str | None) -> set[int]:
    """--update: each replay that ran becomes the reference of its recording; the ids of the
    results whose recording was updated."""
    from mcptape.replay.run import write_jsonl

    store = None
    updated: set[int] = set()
    try:
        for tape, outcome in zip(tapes, outcomes, strict=False):
            result = outcome.result
            if result.error or outcome.interrupted_by is not None:
                continue
            if tape.session_id is None:
                write_jsonl(Path(tape.source), outcome.frames)
                click.echo(f"mcptape: updated {tape.source}", err=True)
            elif result.replay_id is not None and tape.name:
                if store is None:
                    from mcptape.store import open_store

                    store = open_store(db)
                store.update_session(tape.session_id, name=None)
                store.update_session(result.replay_id, name=tape.name)
                click.echo(
                    f"mcptape: the name {tape.name!r} now refers to the replay {result.replay_id[:12]}",
                    err=True,
                )
            else:
                why = "it has no name" if result.replay_id is not None else "the replay was not recorded"
                click.echo(f"mcptape: cannot update {tape.source}: {why}", err=True)
                continue
            updated.add(id(result))
    except OSError as exc:
        raise UserError(f"cannot update the recording: {exc}") from None
    finally:
        if store is not None:
            store.close()
    return updated
