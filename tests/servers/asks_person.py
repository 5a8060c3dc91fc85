"""A test MCP server whose tools need a person: it asks for input, samples, and runs long.

For the interactive clients' tests, served in process (``tests/helpers/inprocess.py``'s
``SdkServerLink``) or over stdio (``python tests/servers/asks_person.py``). Tools:

- ``add(a, b)``: the sum, as text and structured content (with an output schema);
- ``ask(question)``: an ``elicitation/create`` (form: ``name`` required, ``age``), answered as text;
- ``sample(prompt)``: a ``sampling/createMessage``, the model's text answered back;
- ``slow(steps)``: one progress notification every 50 ms, ``steps`` times, then ``done``.
"""

from __future__ import annotations

import asyncio
import json
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

# Sampling and elicitation mid-call are deprecated from 2026-07-28 on; these tools are for earlier revisions.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


class Sum(BaseModel):
    """What ``add`` answers as structured content."""

    sum: int


def add(a: int, b: int) -> Sum:
    """The sum of two integers."""
    return Sum(sum=a + b)


async def ask(question: str, ctx: Context) -> str:
    """Ask the person a question (elicitation) and say what they answered."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Your name"}, "age": {"type": "integer"}},
        "required": ["name"],
    }
    result = await ctx.session.elicit_form(question, schema, related_request_id=ctx.request_id)
    return f"{result.action}: {json.dumps(result.content or {}, sort_keys=True)}"


async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its text."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    with warnings.catch_warnings():  # pytest resets the module's filter for each test
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        result = await ctx.session.create_message([message], max_tokens=50, related_request_id=ctx.request_id)
    content = result.content
    return f"model said: {content.text if isinstance(content, TextContent) else content}"


async def slow(ctx: Context, steps: int = 100) -> str:
    """Report progress every 50 ms, ``steps`` times."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await asyncio.sleep(0.05)
    return "done"


def build() -> MCPServer:
    """A new server (one per connection when served in process: a server keeps its session's state)."""
    server: MCPServer = MCPServer(name="asks-person", version="1.0.0", instructions="Needs a person.")
    for tool in (add, ask, sample, slow):
        server.tool()(tool)
    return server


if __name__ == "__main__":
    build().run("stdio")
