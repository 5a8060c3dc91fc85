"""The MCP surface of debug-script: one tool, ``debug-script``, over the mcp SDK's MCPServer.

Input (all required): ``command``, ``breakpoint {file, line}``, ``expression``,
``timeout`` (ms). Success: ``structuredContent {"results": [{"type", "value"}...]}``
in hit order, plus the same values as readable text. Failure: ``isError: true``,
``structuredContent {"error": message}`` and the message as the text content.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, NotRequired

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

# pydantic needs typing_extensions' TypedDict below Python 3.12.
from typing_extensions import TypedDict

from mcptape import __version__
from mcptape.servers.debug_script.errors import DebugScriptError
from mcptape.servers.debug_script.evaluate import HitValue
from mcptape.servers.debug_script.launch import install_cleanup_handlers
from mcptape.servers.debug_script.session import DebugOutcome, DebugRequest, run_debug_session

TOOL_NAME = "debug-script"

TOOL_DESCRIPTION = """\
Run a Node.js script under the debugger and evaluate an expression at every hit of one breakpoint.

Starts `command` (it must start Node with --inspect-brk=<port>; 0 picks a free port), sets the \
breakpoint at `breakpoint.file`:`breakpoint.line` (1-based; a compiled file's source such as \
src/app.ts works through source maps), evaluates `expression` in the paused frame (locals are \
visible) each time the line runs, and returns the values in hit order as {type, value}: type is \
what `typeof` gives ("object" for null and arrays), value is the JSON value, or a description when \
JSON cannot represent it (functions, circular objects, BigInt). Runs until the process exits or \
`timeout` ms have passed, then stops the process.

Example: command "node --inspect-brk=9229 ./test.js", breakpoint {"file": "test.js", "line": 5}, \
expression "i", timeout 5000 -> {"results": [{"type": "number", "value": 0}, ...]}"""

ValueType = Literal[
    "string", "number", "bigint", "boolean", "symbol", "undefined", "object", "function", "error"
]


class Breakpoint(BaseModel):
    """Where to stop: a file and a 1-based line."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(
        description="Script or source file; relative paths are resolved against the server's working directory."
    )
    # The range is checked by the tool itself, so a bad value gets the tool's error shape.
    line: int = Field(
        description="1-based line number, as editors show it.", json_schema_extra={"minimum": 1}
    )


# Inline rather than a $ref into $defs: simpler for clients that build forms or prompts from the schema.
_BREAKPOINT_SCHEMA = {**Breakpoint.model_json_schema(), "description": "Where to stop: {file, line}."}
_BREAKPOINT_SCHEMA.pop("title", None)


class HitResult(TypedDict):
    """The expression's value at one hit."""

    type: Annotated[ValueType, Field(description="typeof the value; 'error' when the expression threw.")]
    value: Annotated[
        Any,
        Field(
            description="The JSON value, or a description when JSON cannot represent it; null for undefined."
        ),
    ]


class DebugScriptOutput(TypedDict):
    """Either the values at every hit, in hit order, or the error that ended the run."""

    results: NotRequired[list[HitResult]]
    error: NotRequired[str]


async def debug_script(
    command: Annotated[
        str,
        Field(
            description="Command starting Node.js with --inspect-brk=<port>, e.g. node --inspect-brk=9229 ./test.js"
        ),
    ],
    breakpoint: Annotated[Breakpoint, WithJsonSchema(_BREAKPOINT_SCHEMA)],
    expression: Annotated[
        str, Field(description="JavaScript expression evaluated in the paused frame at each hit.")
    ],
    timeout: Annotated[
        float,
        Field(
            description="Time limit for the whole run, in milliseconds.",
            json_schema_extra={"exclusiveMinimum": 0},
        ),
    ],
) -> Annotated[CallToolResult, DebugScriptOutput]:
    """Run the script, evaluate the expression at every breakpoint hit, return the typed values."""
    request = DebugRequest(command, breakpoint.file, breakpoint.line, expression, timeout)
    try:
        check_request(request)
        outcome = await run_debug_session(request)
    except DebugScriptError as error:
        return error_result(error.message)
    return success_result(outcome)


def check_request(request: DebugRequest) -> None:
    """Reject values the schema's types allow but a run cannot use."""
    if request.line < 1:
        raise DebugScriptError(
            f"breakpoint.line must be 1 or more (lines are 1-based, as editors show them); got {request.line}."
        )
    if not math.isfinite(request.timeout_ms) or request.timeout_ms <= 0:
        raise DebugScriptError(
            f"timeout must be a positive number of milliseconds, e.g. 5000; got {request.timeout_ms}."
        )
    if not request.expression.strip():
        raise DebugScriptError(
            "expression is empty: give the JavaScript expression to evaluate at each hit, e.g. i."
        )
    if not request.file.strip():
        raise DebugScriptError("breakpoint.file is empty: give the script or source file, e.g. ./test.js.")


def error_result(message: str) -> CallToolResult:
    """``isError`` with the message both as structured ``error`` and as text."""
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content={"error": message},
        is_error=True,
    )


def success_result(outcome: DebugOutcome) -> CallToolResult:
    """The results as structured content and as readable text."""
    return CallToolResult(
        content=[TextContent(type="text", text=format_outcome(outcome))],
        structured_content={"results": [hit.as_json() for hit in outcome.results]},
    )


def format_outcome(outcome: DebugOutcome) -> str:
    """A readable summary: one line per hit, then how the run ended."""
    count = len(outcome.results)
    lines = [
        f"{count} hit{'s' if count != 1 else ''} at {outcome.breakpoint}, evaluating `{outcome.expression}`:"
    ]
    lines += [f"{index}. {hit.type}: {render_value(hit)}" for index, hit in enumerate(outcome.results, 1)]
    if outcome.timed_out:
        lines.append("The timeout elapsed while the process was still running; it was stopped.")
    else:
        lines.append(f"The process exited ({outcome.exit}).")
    return "\n".join(lines)


def render_value(hit: HitValue) -> str:
    """JSON for JSON values, the bare text for descriptions (``10n``, ``function f() {}``)."""
    if hit.described:
        return str(hit.value)
    if hit.type == "undefined":
        return "undefined"
    return json.dumps(hit.value, ensure_ascii=False)


def build_server() -> MCPServer[Any]:
    """The debug-script MCP server with its one tool."""
    server: MCPServer[Any] = MCPServer(
        name="mcptape-debug-script",
        version=__version__,
        instructions="One tool, debug-script: run a Node.js script under the debugger and evaluate an "
        "expression at every hit of a breakpoint.",
    )
    server.add_tool(
        debug_script,
        name=TOOL_NAME,
        title="Debug a Node.js script",
        description=TOOL_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
    )
    return server


def main() -> None:
    """Serve the tool over stdio until the client goes away; no Node process outlives it."""
    install_cleanup_handlers()
    build_server().run("stdio")
