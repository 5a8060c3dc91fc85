"""A test MCP server whose one tool needs the client's user, its LLM and its roots.

``plan_trip`` resolves three parameters from the client: an elicited traveller name, a
sampled idea and the client's roots. On protocol 2026-07-28 the ``tools/call`` gets
``input_required`` results (``inputRequests`` plus a ``requestState``) until the
client's retries carry every answer; on earlier revisions the SDK sends classic
``elicitation/create``, ``sampling/createMessage`` and ``roots/list`` requests mid-call.
Run: ``python tests/servers/trip_planner.py`` (stdio).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.resolve import ListRoots, Sample
from mcp.types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel

server: MCPServer = MCPServer(name="trip-planner", version="1.0.0")


class Traveller(BaseModel):
    """Who travels."""

    name: str


def ask_traveller(city: str) -> Elicit[Traveller]:
    """The question behind ``who``."""
    return Elicit(f"Who is going to {city}?", Traveller)


def sample_idea(city: str) -> Sample:
    """The LLM question behind ``idea``."""
    ask = SamplingMessage(role="user", content=TextContent(type="text", text=f"One thing to do in {city}?"))
    return Sample([ask], max_tokens=50)


def list_roots() -> ListRoots:
    """The roots behind ``roots``."""
    return ListRoots()


@server.tool()
def plan_trip(
    city: str,
    who: Annotated[Traveller, Resolve(ask_traveller)],
    idea: Annotated[CreateMessageResult, Resolve(sample_idea)],
    roots: Annotated[ListRootsResult, Resolve(list_roots)],
) -> str:
    """Plan a trip: asks who travels, samples an idea and reads the client's roots."""
    text = idea.content.text if isinstance(idea.content, TextContent) else "?"
    places = ",".join(str(r.uri) for r in roots.roots)
    return f"{who.name} goes to {city}: {text} [{idea.model}] roots={places}"


if __name__ == "__main__":
    server.run("stdio")
