"""`mcptape diff A B`: what changed in a server between two recordings, breaking or compatible.

The comparison is :mod:`mcptape.replay.schema_diff` (pure), the loading and the report
:mod:`mcptape.replay.diff_report` (shared with ``mcptape mcp``); this module names the
recordings from the command line (sessions of the database, or JSONL files written by
`mcptape export`) and prints the report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.replay_options import comparison_options

if TYPE_CHECKING:
    from mcptape.replay.diff_report import Loaded


@click.command(cls=Command, summary_options=("--db", "--json", "--fail-on-breaking", "--ignore"))
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--fail-on-breaking",
    is_flag=True,
    help="Exit with status 1 when a change is breaking (for CI); the report is printed either way.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Compare a recording in which the server answered nothing (without this flag, exit 2).",
)
@comparison_options
def diff(
    a: str,
    b: str,
    db: str | None,
    as_json: bool,
    fail_on_breaking: bool,
    allow_empty: bool,
    keep: tuple[str, ...],
    ignore: tuple[str, ...],
    ignore_text: tuple[str, ...],
) -> None:
    """Compare two recordings of a server: its tools, prompts, resources and answers.

    A and B are each a session (an id, a unique prefix of one, a session name
    or `last`: the latest such session in which the client sent a request) or
    a JSONL file written by `mcptape export`. The report lists the
    tools, prompts, resources, resource templates and capabilities added,
    removed or changed between A and B, and the requests both recordings made
    (same method and parameters, `_meta` aside) whose answers differ, with the
    JSON pointers that differ. Answers are compared after the normalisation
    `replay` applies: timestamps, minted ids and UUIDs are left out (--keep puts
    them back, --ignore leaves out more).

    \b
    Each change is classified:
      breaking    a client written against A may fail against B: something
                  removed, a new required argument, an argument's type
                  changed, an output field removed, a request that
                  succeeded in A and fails in B
      compatible  additions and changes of descriptions, titles, annotations
      differs     the same request got a different answer (long texts are
                  shown as a diff of the lines around the change)

    \b
    Exit status: 0; 1 with --fail-on-breaking when a change is breaking; 2 when
    a recording cannot be read or the server answered nothing in it.

    \b
    Examples:
      mcptape diff v1 v2
      mcptape diff tests/recordings/release.jsonl last --fail-on-breaking
      mcptape diff v1 v2 --json | jq '.changes[] | select(.severity=="breaking")'
      mcptape diff v1 v2 --ignore 'tools/call:weather=/result/structuredContent'
    """
    from mcptape.replay.diff_report import report_json, report_lines
    from mcptape.replay.normalise import IgnoreRuleError, Normaliser
    from mcptape.replay.schema_diff import compare

    try:
        normaliser = Normaliser.from_options(keep, ignore, ignore_text)
    except (IgnoreRuleError, ValueError) as exc:
        raise UserError(str(exc)) from None
    first, second = load(a, db), load(b, db)
    empty = next((name for name, snap in (first, second) if snap.empty), None)
    if empty is not None and not allow_empty:
        raise UserError(
            f"{empty} holds no exchange to compare (the server answered no request): a diff with it "
            "would say nothing changed. Name a recording with exchanges, or give --allow-empty"
        )
    report = compare(first[1], second[1], normaliser)
    if as_json:
        import orjson

        from mcptape.terminal import safe_lines

        data = report_json(report, first, second)
        # orjson escapes C0 but not DEL, C1 or bidi controls, which a server's names may
        # carry: escaped too, the JSON means the same and cannot drive a terminal.
        sys.stdout.write(safe_lines(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()) + "\n")
    else:
        from mcptape.terminal import safe

        # Tool names, descriptions and values come from the servers: escaped for the terminal.
        for line in report_lines(report, first, second):
            sys.stdout.write(safe(line) + "\n")
    if fail_on_breaking and report.breaking:
        sys.exit(1)


def load(ref: str, db: str | None) -> Loaded:
    """A recording by session reference or JSONL file path; a UserError when it cannot be read."""
    from mcptape.replay.diff_report import DiffInputError, file_snapshot

    path = Path(ref)
    if ref.endswith((".jsonl", ".ndjson")) or (path.is_file() and not ref.endswith(".db")):
        try:
            return file_snapshot(path)
        except DiffInputError as exc:
            raise UserError(str(exc)) from None
    return _load_session(ref, db)


def _load_session(ref: str, db: str | None) -> Loaded:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import open_for_reading
    from mcptape.replay.diff_report import session_snapshot
    from mcptape.store.describe import database_message
    from mcptape.store.queries import SessionLookupError

    store = open_for_reading(db)
    try:
        return session_snapshot(store, ref)
    except SessionLookupError as exc:
        raise UserError(str(exc)) from None
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()
