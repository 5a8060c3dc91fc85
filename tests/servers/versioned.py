"""A test MCP server in two versions, for `mcptape diff`: ``python versioned.py 1`` or ``... 2``.

Version 2 removes ``shout``, gives ``add`` a new required argument, ``echo`` a new
optional one and a different answer, adds ``multiply``, drops the ``farewell`` prompt
and changes the ``greet`` prompt's description.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

VERSION = sys.argv[1] if len(sys.argv) > 1 else "1"
server: MCPServer = MCPServer(name="versioned", version=f"{VERSION}.0.0")

if VERSION == "1":

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def echo(message: str) -> str:
        """Echo a message."""
        return f"Echo: {message}"

    @server.tool()
    def shout(text: str) -> str:
        """Shout a text."""
        return text.upper()

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    @server.prompt()
    def farewell(name: str) -> str:
        """Say goodbye."""
        return f"Bye {name}"

else:

    @server.tool()
    def add(a: int, b: int, c: int) -> int:
        """Add two numbers."""
        return a + b + c

    @server.tool()
    def echo(message: str, upper: bool = False) -> str:
        """Echo a message."""
        return f"ECHO: {message.upper() if upper else message}"

    @server.tool()
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone warmly."""
        return f"Hello {name}"


@server.resource("config://app")
def app_config() -> str:
    """The app's configuration."""
    return "debug=false"


if __name__ == "__main__":
    server.run("stdio")
