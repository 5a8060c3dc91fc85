"""The MCP surface of debug-script: one tool, ``debug-script``, on the mcp SDK's low-level server.

Input: ``command``, ``breakpoint {file, line}``, ``expression``, ``timeout`` (ms),
and optionally ``max_value_length`` and ``max_total_length``. Success:
``structuredContent {"results": [{"type", "value", "line", "column",
"function"}...], "notes": [...]}`` in hit order, with one short line of text
(the values are not repeated as text: a response carries each value once).
Failure: ``isError: true``, ``structuredContent {"error": message}`` and the
message as the text content.

The low-level server, not MCPServer: its argument validation answers a bad call
with a pydantic dump and no ``structuredContent``; here ``arguments`` checks the
raw arguments and every mistake is an ordinary one-line error result.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
    Tool,
    ToolAnnotations,
)

from mcptape import __version__
from mcptape.servers.debug_script.arguments import INPUT_SCHEMA, parse_arguments
from mcptape.servers.debug_script.errors import DebugScriptError
from mcptape.servers.debug_script.evaluate import escape_lone_surrogates
from mcptape.servers.debug_script.launch import install_cleanup_handlers
from mcptape.servers.debug_script.policy import CommandPolicy
from mcptape.servers.debug_script.session import DebugOutcome, run_debug_session
from mcptape.servers.debug_script.transport import surrogate_safe_stdin

TOOL_NAME: Final = "debug-script"

TOOL_DESCRIPTION: Final = """\
Run a Node.js script under the debugger and evaluate an expression at every hit of one breakpoint.

Starts `command` (Node with --inspect-brk=<port>; 0 picks a free port; TypeScript through \
`node --import tsx`), sets the breakpoint at `breakpoint.file`:`breakpoint.line` (1-based; a \
compiled file's source such as src/app.ts works through source maps), evaluates `expression` once \
in the paused frame (locals are visible) each time that line runs, and returns the hits in order as \
{type, value, line, column, function}: type is what `typeof` gives ("object" for null and arrays), \
value is the JSON value, or a description when JSON cannot represent it (functions, circular \
objects, BigInt); line/column/function say where the program stopped. A pause V8 makes outside \
the requested line's code is not counted (see `notes`). Values longer than `max_value_length` \
characters are cut (`truncated` says by how much). Runs until the process exits or `timeout` ms \
have passed, then stops the process.

Example: command "node --inspect-brk=0 ./test.js", breakpoint {"file": "test.js", "line": 5}, \
expression "i", timeout 5000 -> {"results": [{"type": "number", "value": 0, "line": 5, ...}, ...]}"""

_HIT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "type": {
            "type": "string",
            "enum": [
                "string",
                "number",
                "bigint",
                "boolean",
                "symbol",
                "undefined",
                "object",
                "function",
                "error",
            ],
            "description": "typeof the value; 'error' when the expression threw or did not return.",
        },
        "value": {
            "description": "The JSON value, or a description when JSON cannot represent it; null for undefined."
        },
        "line": {"type": "integer", "description": "1-based line of the breakpoint file where it stopped."},
        "column": {"type": "integer", "description": "1-based column where it stopped."},
        "function": {"type": "string", "description": "The paused function; empty for top-level code."},
        "truncated": {
            "type": "integer",
            "description": "Characters cut from the value (absent when none); a cut "
            "object's value is the start of its JSON text.",
        },
        "escaped": {
            "type": "boolean",
            "description": "True when lone UTF-16 surrogates in the value are written as \\\\uXXXX text.",
        },
    },
    "required": ["type", "value", "line", "column", "function"],
}

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "description": "Either the hits in order (and notes about the breakpoint), or the error that ended the run.",
    "properties": {
        "results": {"type": "array", "items": _HIT_SCHEMA},
        "notes": {"type": "array", "items": {"type": "string"}},
        "error": {"type": "string"},
    },
}


def tool() -> Tool:
    """The one tool, as ``tools/list`` shows it."""
    return Tool(
        name=TOOL_NAME,
        title="Debug a Node.js script",
        description=TOOL_DESCRIPTION,
        input_schema=INPUT_SCHEMA,
        output_schema=OUTPUT_SCHEMA,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
    )


async def call_debug_script(arguments: Any, policy: CommandPolicy) -> CallToolResult:
    """Check the arguments, run the script, and answer with the hits or a one-line error."""
    try:
        request = parse_arguments(arguments)
        outcome = await run_debug_session(request, policy)
    except DebugScriptError as error:
        return error_result(error.message)
    return success_result(outcome)


def error_result(message: str) -> CallToolResult:
    """``isError`` with the message both as structured ``error`` and as text."""
    message, _ = escape_lone_surrogates(message)
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content={"error": message},
        is_error=True,
    )


def success_result(outcome: DebugOutcome) -> CallToolResult:
    """The hits as structured content, with one summary line (plus notes) as text."""
    notes = [escape_lone_surrogates(note)[0] for note in outcome.notes]
    structured: dict[str, Any] = {"results": [hit.as_json() for hit in outcome.results]}
    if notes:
        structured["notes"] = notes
    return CallToolResult(
        content=[TextContent(type="text", text=escape_lone_surrogates(summarize(outcome))[0])],
        structured_content=structured,
    )


def summarize(outcome: DebugOutcome) -> str:
    """One line saying how many hits, where, how the run ended and what was cut; then the notes."""
    count = len(outcome.results)
    lines = {hit.location.line for hit in outcome.results}
    where = f"line {lines.pop()}" if len(lines) == 1 else f"lines {', '.join(map(str, sorted(lines)))}"
    ended = (
        "the timeout elapsed and the process was stopped"
        if outcome.timed_out
        else f"the process exited ({outcome.exit})"
    )
    text = f"{count} hit{'s' if count != 1 else ''} at {outcome.breakpoint} ({where}); {ended}."
    cut = sum(1 for hit in outcome.results if hit.value.truncated)
    if cut:
        text += (
            f" {cut} value{'s were' if cut != 1 else ' was'} cut (see `truncated`; raise max_value_length "
            "or max_total_length to keep more)."
        )
    if any(hit.value.escaped for hit in outcome.results):
        text += " Lone UTF-16 surrogates are written as \\uXXXX text (see `escaped`)."
    text += " The values are in structuredContent.results."
    return "\n".join([text, *outcome.notes])


def build_server(policy: CommandPolicy | None = None) -> Server[Any]:
    """The debug-script MCP server with its one tool; ``policy`` says which programs it may start."""
    allowed = policy or CommandPolicy()

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[tool()])

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        if params.name != TOOL_NAME:
            return error_result(f"Unknown tool {params.name!r}: this server has one tool, {TOOL_NAME}.")
        return await call_debug_script(params.arguments if params.arguments is not None else {}, allowed)

    return Server(
        "mcptape-debug-script",
        version=__version__,
        instructions="One tool, debug-script: run a Node.js script under the debugger and evaluate an "
        "expression at every hit of a breakpoint.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(policy: CommandPolicy | None = None) -> None:
    """Serve the tool over our stdin and stdout until the client goes away."""
    server = build_server(policy)
    async with stdio_server(stdin=surrogate_safe_stdin()) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(policy: CommandPolicy | None = None) -> None:
    """Serve the tool over stdio until the client goes away; no Node process outlives it."""
    import anyio

    install_cleanup_handlers()
    anyio.run(serve_stdio, policy)
