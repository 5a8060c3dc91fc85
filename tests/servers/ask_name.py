"""A tiny MCP server for tests whose one tool asks the client a question before it answers.

``greet`` needs a name it does not have: a resolver returns ``Elicit``, so on protocol
2026-07-28 the first ``tools/call`` gets an ``input_required`` result carrying an
``elicitation/create`` input request, and the client's retry (with ``inputResponses``)
gets the greeting. On earlier revisions the SDK sends a classic ``elicitation/create``
request mid-call instead. Run: ``python tests/servers/ask_name.py`` (stdio).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel

server: MCPServer = MCPServer(name="ask-name", version="1.0.0")


class Name(BaseModel):
    """What the server asks the user for."""

    name: str


def ask_name(greeting: str) -> Elicit[Name]:
    """The question behind ``greet``'s ``who`` parameter."""
    return Elicit(f"Who should I say {greeting!r} to?", Name)


@server.tool()
def greet(greeting: str, who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the user names."""
    return f"{greeting}, {who.name}!"


if __name__ == "__main__":
    server.run("stdio")
