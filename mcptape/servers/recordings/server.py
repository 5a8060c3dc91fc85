"""The MCP surface of ``mcptape mcp``: the recordings' tools and the views' documentation, on the mcp SDK's low-level server.

Tools (:mod:`mcptape.servers.recordings.schemas` declares them): ``list_sessions``,
``show_session``, ``query``, ``replay``, ``diff``; each answers with ``structuredContent``
matching its output schema and one line of text, or with ``isError`` and one line saying
what went wrong. Resources (:mod:`mcptape.servers.recordings.resources`): the SQL views.

The SDK is fine here: this is a server, not the forwarding path. Nothing here writes: the
database is opened read-only, a query runs in the read-only sandbox, a replay is not
recorded, and ``replay`` starts registered servers only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from mcp.server.lowlevel import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListToolsResult,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

from mcptape import __version__
from mcptape.servers.recordings import resources
from mcptape.servers.recordings.arguments import ToolFailure
from mcptape.servers.recordings.schemas import TOOLS
from mcptape.servers.recordings.tools import Recordings

INSTRUCTIONS: Final = (
    "mcptape's recordings of MCP sessions: every frame between clients and servers it recorded. "
    "list_sessions to find one, show_session for its exchanges, query for SQL over the views "
    "(mcptape://views documents them), diff to compare two recordings of a server, replay to "
    "re-drive a registered server with a recording and see what changed. Nothing here writes."
)


def tools() -> list[Tool]:
    """The tools, as ``tools/list`` shows them."""
    return [
        Tool(
            name=name,
            title=spec["title"],
            description=spec["description"],
            input_schema=spec["input"],
            output_schema=spec["output"],
            annotations=ToolAnnotations(
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=name != "replay",
                open_world_hint=name == "replay",
            ),
        )
        for name, spec in TOOLS.items()
    ]


def _summary(name: str, result: dict[str, Any]) -> str:
    """One line of text beside the structured result (the data is not repeated as text)."""
    if name == "list_sessions":
        more = " (more match: raise limit or narrow the filters)" if result["truncated"] else ""
        return f"{len(result['sessions'])} sessions{more}; see structuredContent.sessions."
    if name == "show_session":
        page = f"exchanges {len(result['exchanges'])} of {result['total']}"
        following = result["next_cursor"]
        return page + (f"; next page: cursor {following}" if following is not None else "") + "."
    if name == "query":
        cut = " (more rows: raise max_rows or add LIMIT)" if result["truncated"] else ""
        return f"{result['row_count']} rows{cut}; columns: {', '.join(result['columns'])}."
    return str(result.get("summary", ""))


async def call(recordings: Recordings, name: str, arguments: Any) -> CallToolResult:
    """Run one tool; a failure is an ``isError`` result with one line, never an exception."""
    blocking: dict[str, Callable[[Any], dict[str, Any]]] = {
        "list_sessions": recordings.list_sessions,
        "show_session": recordings.show_session,
        "query": recordings.query,
        "diff": recordings.diff,
    }
    running: dict[str, Callable[[Any], Awaitable[dict[str, Any]]]] = {"replay": recordings.replay}
    try:
        if name in blocking:
            result = await anyio.to_thread.run_sync(blocking[name], arguments)
        elif name in running:
            result = await running[name](arguments)
        else:
            raise ToolFailure(f"unknown tool {name!r}: this server has {', '.join(TOOLS)}")
    except ToolFailure as failure:
        return CallToolResult(content=[TextContent(type="text", text=str(failure))], is_error=True)
    # Values a JSON Schema validator meets as they would arrive over the wire.
    result = json.loads(json.dumps(result, default=str))
    return CallToolResult(
        content=[TextContent(type="text", text=_summary(name, result))], structured_content=result
    )


def build_server(recordings: Recordings) -> Server[Any]:
    """The server over ``recordings``."""

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools())

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return await call(recordings, params.name, params.arguments)

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        listed = [
            Resource(uri=uri, name=uri.rsplit("/", 1)[-1], description=text, mime_type="text/markdown")
            for uri, text in resources.uris().items()
        ]
        return ListResourcesResult(resources=listed)

    async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)

        def text() -> str | None:
            try:
                store = recordings.store()
            except ToolFailure:
                store = None  # no database yet: the views are documented all the same
            return resources.read(uri, store)

        found = await anyio.to_thread.run_sync(text)
        if found is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                -32002, f"no resource {uri!r}; list them with resources/list ({resources.PREFIX}/NAME)"
            )
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type="text/markdown", text=found)]
        )

    return Server(
        "mcptape-recordings",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def serve_stdio(recordings: Recordings) -> None:
    """Serve over our stdin and stdout until the client goes away."""
    from mcp.server.stdio import stdio_server

    server = build_server(recordings)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        recordings.close()


def main(db: str | None, config_path: str | None) -> None:
    from mcptape.proxy.early_signals import STOP_SIGNALS, die_on

    # Nothing to write: a signal ends the server at once (a replay in flight first shuts its
    # server down: see Recordings.replay).
    die_on(STOP_SIGNALS)
    anyio.run(serve_stdio, Recordings(db, config_path))
