"""A stdio MCP server on the Python SDK that speaks 2026-07-28, with a tool that needs the user's input.

``trigger-elicitation-request`` (server-everything's name, so ``mcptape probe`` finds it)
needs a name: at 2026-07-28 its first ``tools/call`` is answered ``input_required`` with an
``elicitation/create`` input request, and the retry carrying ``inputResponses`` gets the
greeting; at a 2025 revision the server asks with an ``elicitation/create`` request.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel

server: MCPServer = MCPServer(name="asks-input", version="1.0.0")


class Name(BaseModel):
    """What the server asks the user for."""

    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("Who is there?", Name)


@server.tool(name="trigger-elicitation-request")
def trigger_elicitation_request(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the user names."""
    return f"Hello, {who.name}!"


if __name__ == "__main__":
    server.run("stdio")
