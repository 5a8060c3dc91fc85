"""A test MCP server for `mcptape call`: paginated lists, typed tool arguments, tool errors, output schemas.

Built on the SDK's low-level server so that pages and results are exactly what the
tests expect: tools and resources come two per page (cursors ``"2"``, ``"4"``),
there are no prompts (the capability is not advertised), and the tools are

- ``typed``: echoes its arguments as structured content (number, integer, boolean,
  array, object, string parameters; output schema given);
- ``fail``: a result with ``isError: true`` and the text ``"it failed"``;
- ``bad-output``: structured content that breaks its own output schema;
- ``log``: sends one log message at each level it is given, then answers;
- ``ask``: (before 2026-07-28) asks the client for its roots, a sampling and an
  elicitation, whatever the client declared, and reports each answer as a line.

Run: ``python tests/servers/paged.py`` (stdio).
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 2

TYPED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "number"},
        "count": {"type": "integer"},
        "on": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "name": {"type": "string"},
        "maybe": {"type": ["integer", "null"]},
    },
}
ECHO_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"arguments": {"type": "object"}},
    "required": ["arguments"],
}
STRICT_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"total": {"type": "integer"}},
    "required": ["total"],
}

TOOLS = [
    types.Tool(
        name="typed",
        description="Echo typed arguments.",
        input_schema=TYPED_SCHEMA,
        output_schema=ECHO_OUTPUT,
    ),
    types.Tool(name="fail", description="Always fails.", input_schema={"type": "object"}),
    types.Tool(
        name="bad-output",
        description="Breaks its schema.",
        input_schema={"type": "object"},
        output_schema=STRICT_OUTPUT,
    ),
    types.Tool(
        name="log",
        description="Log at the given levels.",
        input_schema={"type": "object", "properties": {"levels": {"type": "array"}}},
    ),
]
TOOLS.append(
    types.Tool(name="ask", description="Ask the client three things.", input_schema={"type": "object"})
)
RESOURCES = [types.Resource(uri=f"test://item/{i}", name=f"item-{i}") for i in range(5)]


def _page(items: list[Any], params: types.PaginatedRequestParams | None) -> tuple[list[Any], str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return items[start:end], (str(end) if end < len(items) else None)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    page, cursor = _page(TOOLS, params)
    return types.ListToolsResult(tools=page, next_cursor=cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "typed":
        text = types.TextContent(type="text", text="ok")
        return types.CallToolResult(content=[text], structured_content={"arguments": arguments})
    if params.name == "fail":
        return types.CallToolResult(content=[types.TextContent(type="text", text="it failed")], is_error=True)
    if params.name == "bad-output":
        text = types.TextContent(type="text", text="bad")
        return types.CallToolResult(content=[text], structured_content={"total": "not a number"})
    if params.name == "log":
        for level in arguments.get("levels", []):
            await ctx.session.send_log_message(level=level, data=f"a {level} message", logger="paged")
        return types.CallToolResult(content=[types.TextContent(type="text", text="logged")])
    if params.name == "ask":
        return types.CallToolResult(content=[types.TextContent(type="text", text=await _ask(ctx))])
    raise ValueError(f"unknown tool {params.name}")


async def _ask(ctx: Any) -> str:
    lines = []
    asks = [
        ("roots", lambda: ctx.session.list_roots()),
        (
            "sampling",
            lambda: ctx.session.create_message(
                [types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
                max_tokens=5,
            ),
        ),
        (
            "elicitation",
            lambda: ctx.session.elicit(
                "name?", {"type": "object", "properties": {"name": {"type": "string"}}}
            ),
        ),
    ]
    for name, ask in asks:
        try:
            answer = await ask()
            lines.append(f"{name}: {answer.model_dump_json(by_alias=True, exclude_none=True)}")
        except Exception as exc:
            lines.append(f"{name}: error {exc}")
    return "\n".join(lines)


async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    page, cursor = _page(RESOURCES, params)
    return types.ListResourcesResult(resources=page, next_cursor=cursor)


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    contents = types.TextResourceContents(
        uri=str(params.uri), text=f"contents of {params.uri}", mime_type="text/plain"
    )
    return types.ReadResourceResult(contents=[contents])


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


# The logging capability is deprecated in 2026-07-28; this server serves older clients too.
warnings.simplefilter("ignore")
server: Server[Any] = Server(
    "paged",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_set_logging_level=set_level,
)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
