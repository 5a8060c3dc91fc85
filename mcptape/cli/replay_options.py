"""What `replay` and `serve` share on the command line: the server after ``--``, --upstream, --url, the comparison options, loading recordings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError
from mcptape.cli.helptext import Command

if TYPE_CHECKING:
    from mcptape.replay.tape import Tape

COMMAND_KEY = "mcptape.command"


class CommandAfterDashes(Command):
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
    from mcptape.cli.upstream_args import upstream_command

    return upstream_command(command, upstream, config_path)


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


REPLAY_URL_HELP = "Replay against a running remote MCP server at URL (streamable HTTP or legacy SSE) instead of starting COMMAND."


def remote_options(url_help: str = REPLAY_URL_HELP) -> Callable[[Any], Any]:
    """``--url``, ``--transport`` and ``--header``: the remote server a command talks to
    (``record`` records it, ``replay`` replays against it, ``serve`` forwards misses to it)."""

    def decorate(func: Any) -> Any:
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
            "fall back to SSE as the specification describes). Default: auto, or the registry entry's type.",
        )(func)
        return click.option("--url", metavar="URL", help=url_help)(func)

    return decorate


def remote_server(
    ctx: click.Context,
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    upstream: str | None,
    config_path: str | None,
) -> tuple[str, Any, str] | None:
    """(redacted URL, link factory, transport) for --url or a remote --upstream entry; None for a command."""
    from mcptape.cli.upstream_args import remote_upstream

    command = tuple(ctx.meta.get(COMMAND_KEY, ()))
    remote = remote_upstream(url, transport, header_flags, command, upstream, config_path)
    if remote is None and (transport is not None or header_flags):
        raise UserError("--transport and --header apply to a remote server: give --url URL")
    if remote is None:
        return None
    description, factory, session_transport = remote
    return description, factory, session_transport.split("->", 1)[-1]


def comparison_options(func: Any) -> Any:
    """``--ignore``, ``--ignore-text`` and ``--keep``: what is left out of the comparison."""
    func = click.option(
        "--keep",
        multiple=True,
        type=click.Choice(["meta", "ids", "timestamps"]),
        help="Compare what is normalised away by default: _meta members (meta), ids and tokens the "
        "server mints such as requestState, cursors and UUIDs (ids), ISO dates and time fields "
        "(timestamps). Repeatable.",
    )(func)
    func = click.option(
        "--ignore-text",
        multiple=True,
        metavar="REGEX",
        help="Leave out of the comparison what this regular expression matches inside any string "
        "(e.g. 'took \\d+ ms'), where --ignore would drop the whole string. Repeatable.",
    )(func)
    return click.option(
        "--ignore",
        multiple=True,
        metavar="[METHOD[:TOOL]=]POINTER",
        help="Leave a JSON Pointer out of the comparison; * matches any member or element; scope it to a "
        "method or a tool (tools/call:weather=/result/isError); METHOD=/ drops that method's "
        "notifications altogether. Repeatable.",
    )(func)


def load_tapes(db: str | None, refs: tuple[str, ...], files: tuple[str, ...]) -> list[Tape]:
    """The recordings to replay: session references or name patterns from the store, then files."""
    from mcptape.replay.tape import TapeError, is_pattern, load_session, matching_names, read_jsonl

    tapes: list[Tape] = []
    if refs:
        from sqlalchemy.exc import SQLAlchemyError

        from mcptape.cli.sessions import open_for_reading
        from mcptape.store.describe import database_message

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
