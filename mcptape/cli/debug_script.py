"""`mcptape debug-script`: the built-in debug-script MCP server on stdio."""

from __future__ import annotations

import click

from mcptape.cli.helptext import Command


@click.command("debug-script", cls=Command)
@click.option(
    "--allow-command",
    "allow_commands",
    metavar="PROGRAM",
    multiple=True,
    help="Also let the tool launch PROGRAM (a name such as tsx or npx, or an exact path); repeatable. "
    "By default it launches only node and nodejs.",
)
@click.option(
    "--allow-any-command",
    is_flag=True,
    help="Let the tool launch any program its caller names (only for a server no one else can reach).",
)
def debug_script(allow_commands: tuple[str, ...], allow_any_command: bool) -> None:
    """Serve the debug-script MCP tool over stdio (for an MCP client to start).

    One tool, `debug-script`, runs a Node.js script under the inspector, stops
    at a breakpoint and evaluates an expression every time the line runs,
    returning the typed values in hit order with where each hit stopped. Its
    arguments: `command` (starting node with --inspect-brk=PORT; 0 picks a
    free port), `breakpoint` {file, line} (1-based; TypeScript sources work
    through source maps, or run them with node --import tsx), `expression`,
    `timeout` (milliseconds for the whole run); optionally `max_value_length`
    and `max_total_length` (characters kept per value and per response).

    The tool launches only Node.js (node, nodejs, or a path ending in one)
    unless the server is started with --allow-command or --allow-any-command:
    it is registered as an upstream that a gateway may serve to others.

    Stdin and stdout carry MCP messages, so run it from an MCP client, not by
    hand. It is also registered as the built-in upstream `debug-script`.

    \b
    Examples:
      # In an mcpServers config (Claude Desktop and others):
      "debug-script": {"command": "mcptape", "args": ["debug-script"]}
      # Also allow the tsx launcher (tsx src/app.ts):
      mcptape debug-script --allow-command tsx
      # Recorded, so every call lands in the database:
      mcptape record --name dbg -- mcptape debug-script
      # The same server without the CLI:
      python -m mcptape.servers.debug_script

    \b
    A tools/call request it answers:
      {"name": "debug-script", "arguments": {
        "command": "node --inspect-brk=0 ./test.js",
        "breakpoint": {"file": "test.js", "line": 5},
        "expression": "i", "timeout": 5000}}
    -> structuredContent {"results": [
         {"type": "number", "value": 0, "line": 5, "column": 3,
          "function": ""}, ...]}
    """
    from mcptape.servers.debug_script.policy import CommandPolicy
    from mcptape.servers.debug_script.server import main

    if _isatty(0):
        # Typed lines would only be malformed JSON-RPC: say what this is for.
        click.echo(
            "mcptape debug-script: serving the debug-script MCP tool on stdin/stdout (JSON-RPC); it is meant "
            'to be started by an MCP client, e.g. "debug-script": {"command": "mcptape", "args": '
            '["debug-script"]} in an mcpServers config. Ctrl-C stops it.',
            err=True,
        )

    main(CommandPolicy(frozenset(allow_commands), allow_any_command))


def _isatty(fd: int) -> bool:
    import os

    try:
        return os.isatty(fd)
    except OSError:
        return False
