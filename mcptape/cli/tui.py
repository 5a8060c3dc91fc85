"""`mcptape tui`: drive one MCP server by hand in the terminal (Textual), recorded as every session is."""

from __future__ import annotations

import sys
from typing import Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.rule_options import rule_options, rules_from_cli


@click.command(
    cls=Command,
    context_settings={"ignore_unknown_options": False},
    summary_options=("--upstream", "--config", "--url", "--db"),
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND...]")
@click.option(
    "--upstream", metavar="NAME", help="A registry entry (--config, or the built-ins) to start or reach."
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file for --upstream.",
)
@click.option(
    "--url", metavar="URL", help="A remote server (streamable HTTP, or legacy SSE with --transport sse)."
)
@click.option("--transport", type=click.Choice(["http", "sse"]), help="With --url: how the server speaks.")
@click.option(
    "--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="With --url: a header (repeatable)."
)
@click.option("--token", metavar="TOKEN", help="With --url: sent as Authorization: Bearer TOKEN.")
@click.option("--name", metavar="NAME", help="The recorded session's name (default: the upstream's name).")
@click.option(
    "--protocol-version",
    default="auto",
    show_default=True,
    metavar="VERSION",
    help="auto (server/discover, then initialize) or a revision such as 2025-11-25 or 2026-07-28.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
@db_option
@rule_options
def tui(
    command: tuple[str, ...],
    upstream: str | None,
    config_path: str | None,
    url: str | None,
    transport: str | None,
    headers: tuple[str, ...],
    token: str | None,
    name: str | None,
    protocol_version: str,
    no_record: bool,
    db: str | None,
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
) -> None:
    """Drive an MCP server by hand in the terminal; the session is recorded (mode client).

    Panes (F1-F7): Tools, Resources, Templates, Prompts (a list, the chosen item's
    form made from its schema, a progress bar, the result by content type), Logs
    (choose the level), Traffic (every frame as it passes), Server (its info, who
    answers its requests, your roots). When the server asks (sampling,
    elicitation), a dialog opens, unless a --handle-* rule answers first.

    \b
    Keys: ctrl+r runs the chosen tool (reads the resource, gets the prompt),
    esc cancels it, ctrl+j edits the arguments as JSON, ctrl+n loads the next
    page of a list, ctrl+o reopens a request still waiting, ctrl+q quits.

    \b
    Examples:
      mcptape tui --upstream demo
      mcptape tui --config servers.json --upstream files
      mcptape tui -- npx -y @modelcontextprotocol/server-everything
      mcptape tui --url http://127.0.0.1:3001/mcp --handle-sampling auto
    """
    try:
        import textual  # noqa: F401 - only to say clearly that it is missing
    except ImportError:
        raise UserError("mcptape tui needs Textual: pip install 'mcptape[tui]'") from None
    from mcptape.client.errors import ValidationError
    from mcptape.client.negotiate import check_version
    from mcptape.client.targets import target_from
    from mcptape.rules.rules import RuleError, parse_root

    opts: dict[str, Any] = {
        "upstream": upstream, "server_name": None, "config_path": config_path, "url": url,
        "transport": transport, "headers": headers, "token": token, "name": name,
    }  # fmt: skip
    if not (command or upstream or url):
        raise UserError("no server: give --upstream NAME (with --config FILE), -- COMMAND, or --url URL")
    try:
        target = target_from(command, opts)
        version = check_version(protocol_version)
        listed = [parse_root(spec) for spec in roots]
    except (ValidationError, RuleError) as exc:
        raise UserError(str(exc)) from None
    rules = rules_from_cli(handle_sampling, handle_elicitation, (), inject)
    from mcptape.client.interactive import Interactive
    from mcptape.tui.app import ClientApp

    interactive = Interactive(
        target,
        lambda name, data: None,  # the app takes the events
        db=db,
        record=not no_record,
        rules=rules or None,
        roots=listed,
        protocol_version=version,
    )
    app = ClientApp(interactive)
    app.run()
    if app.stopped_by is not None:
        import signal

        click.echo(f"mcptape: stopped by {signal.Signals(app.stopped_by).name}", err=True)
        sys.exit(128 + app.stopped_by)
