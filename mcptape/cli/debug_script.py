"""`mcptape debug-script`: the built-in debug-script MCP server on stdio."""

from __future__ import annotations

import click


@click.command("debug-script")
def debug_script() -> None:
    """Serve the debug-script MCP tool over stdio (for an MCP client to start).

    One tool, `debug-script`, runs a Node.js script under the inspector, stops
    at a breakpoint and evaluates an expression every time the line runs,
    returning the typed values in hit order. Its arguments, all required:
    `command` (starting node with --inspect-brk=PORT; 0 picks a free port),
    `breakpoint` {file, line} (1-based; TypeScript sources work through source
    maps), `expression`, `timeout` (milliseconds for the whole run).

    Stdin and stdout carry MCP messages, so run it from an MCP client, not by
    hand. It is also registered as the built-in upstream `debug-script`.

    \b
    Examples:
      # In an mcpServers config (Claude Desktop and others):
      "debug-script": {"command": "mcptape", "args": ["debug-script"]}
      # Recorded, so every call lands in the database:
      mcptape record --name dbg -- mcptape debug-script
      # The same server without the CLI:
      python -m mcptape.servers.debug_script

    \b
    A tools/call request it answers:
      {"name": "debug-script", "arguments": {
        "command": "node --inspect-brk=9229 ./test.js",
        "breakpoint": {"file": "test.js", "line": 5},
        "expression": "i", "timeout": 5000}}
    -> structuredContent {"results": [{"type": "number", "value": 0}, ...]}
    """
    from mcptape.servers.debug_script.server import main

    main()
