"""`mcptape mcp`: mcptape as an MCP server (stdio) over its own recordings."""

from __future__ import annotations

import click

from mcptape.cli.common import db_option
from mcptape.cli.helptext import Command


@click.command("mcp", cls=Command)
@db_option
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file: the servers the replay tool may start (besides the built-ins).",
)
def mcp(db: str | None, config_path: str | None) -> None:
    """Serve the recordings over MCP on stdio, so an agent can ask what its servers did.

    Tools: list_sessions (filters: name, server, mode, status, since, until),
    show_session (a session's exchanges, a page at a time, each text cut at
    max_chars, and its events), query (one read-only SQL statement with a time
    limit; rows and values bounded), replay (a recording against a registered
    server: a built-in or an entry of --config, never any other command; the
    comparison report comes back, nothing is recorded) and diff (two recordings
    of a server: what was added, removed, changed, and which answers differ).
    Every result is structured (each tool has an output schema). Resources:
    mcptape://views and mcptape://views/NAME document the SQL views. Nothing is
    written: the database is opened read-only, and never created or migrated.

    It is also the built-in upstream `recordings`: `mcptape proxy` serves it at
    /servers/recordings/mcp, reading the gateway's own database.

    \b
    Examples:
      mcptape mcp
      mcptape mcp --db team.db --config claude_desktop_config.json
      mcptape call -m tools/call --tool-name list_sessions --tool-arg limit=5 \\
          --upstream recordings
    In an mcpServers config:
      "recordings": {"command": "mcptape", "args": ["mcp"]}
    """
    from mcptape.servers.recordings.server import main

    if _isatty(0):
        # Typed lines would only be malformed JSON-RPC: say what this is for.
        click.echo(
            "mcptape mcp: serving the recordings over MCP on stdin/stdout (JSON-RPC); it is meant to be "
            'started by an MCP client, e.g. "recordings": {"command": "mcptape", "args": ["mcp"]} in an '
            "mcpServers config. Ctrl-C stops it.",
            err=True,
        )
    main(db, config_path)


def _isatty(fd: int) -> bool:
    import os

    try:
        return os.isatty(fd)
    except OSError:
        return False
