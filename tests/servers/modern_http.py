"""A test MCP server over streamable HTTP that speaks 2026-07-28 (and earlier revisions).

The SDK's streamable HTTP server answers a 2026-07-28 request as a self-contained POST
(no ``initialize``, no ``Mcp-Session-Id``; ``server/discover``; ``Mcp-Method`` and
``Mcp-Name`` headers checked against the body). Tools:

- ``add``: the sum of ``a`` and ``b``, as text and structured content;
- ``greet``: needs a name it does not have, so on 2026-07-28 the first ``tools/call``
  gets an ``input_required`` result (an ``elicitation/create`` input request and a
  ``requestState``) and the client's retry with ``inputResponses`` gets the greeting.

``--changed`` is the next build with a regression: ``add`` is off by one.
Run: ``python tests/servers/modern_http.py PORT [--changed]``.
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel

CHANGED = "--changed" in sys.argv[2:]
server: MCPServer = MCPServer(name="modern-http", version="1.0.0")


class Name(BaseModel):
    """What the server asks the user for."""

    name: str


def ask_name(greeting: str) -> Elicit[Name]:
    """The question behind ``greet``'s ``who`` parameter."""
    return Elicit(f"Who should I say {greeting!r} to?", Name)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + (1 if CHANGED else 0)


@server.tool()
def greet(greeting: str, who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the user names."""
    return f"{greeting}, {who.name}!"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
