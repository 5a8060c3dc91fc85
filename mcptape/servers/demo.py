"""A small MCP server for the tour (`mcptape demo`) and for tests: `python -m mcptape.servers.demo`.

It speaks stdio through the mcp SDK's ``MCPServer`` and exercises the parts of the
protocol a recording should show: plain and structured tool results, a tool that
logs and reports progress while it runs, a tool that fails with ``isError``, a
static resource, a resource template and a prompt. Every answer is a pure function
of its arguments, so recordings of two runs compare equal after normalisation.
"""

from __future__ import annotations

import signal
import warnings
import zlib
from typing import Any, TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import EmptyResult, LoggingLevel, SetLevelRequestParams

# Logging is deprecated from protocol 2026-07-28 on, but every client in the wild still
# speaks an earlier revision; the warning would only litter the server's stderr.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SERVER_NAME = "mcptape-demo"
SERVER_VERSION = "1.0.0"

README = """\
# mcptape demo server

A small MCP server that ships with mcptape. Its tools:

- `add(a, b)`: the sum of two integers
- `echo(text)`: the text, unchanged
- `weather(city)`: a made-up, deterministic forecast as structured output
- `countdown(start)`: counts down, sending a log message and a progress notification per step
- `fail(reason)`: always fails, with `isError` set on the result

Resources: `demo://readme` (this text) and the template `demo://greeting/{name}`.
Prompt: `review(code, language)`.
"""

CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "snowy", "foggy")
LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

server: MCPServer = MCPServer(
    name=SERVER_NAME,
    version=SERVER_VERSION,
    instructions="A demo server shipped with mcptape: try the tools, the readme resource and the review prompt.",
    # Tool failures are part of the tour; the SDK logs each at INFO on stderr otherwise.
    log_level="WARNING",
)


class LogThreshold:
    """The level set by `logging/setLevel`: over stdio one process serves one client."""

    level: LoggingLevel = "debug"

    @classmethod
    def allows(cls, level: LoggingLevel) -> bool:
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(cls.level)


async def set_log_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    """`logging/setLevel`: before protocol 2026-07-28 the server filters its own log messages."""
    LogThreshold.level = params.level
    return EmptyResult()


# MCPServer has no decorator for logging/setLevel; registering the handler on the
# low-level server also makes it advertise the logging capability.
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_log_level)


class Forecast(TypedDict):
    """The structured result of `weather`."""

    city: str
    temperature_c: int
    conditions: str
    humidity_percent: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def weather(city: str) -> Forecast:
    """A made-up forecast for a city: the same city always gets the same weather."""
    # crc32, not hash(): str hashes are salted per process, and replays must match.
    seed = zlib.crc32(city.strip().lower().encode())
    return Forecast(
        city=city,
        temperature_c=seed % 35 - 5,
        conditions=CONDITIONS[seed // 35 % len(CONDITIONS)],
        humidity_percent=20 + seed // 7 % 75,
    )


@server.tool()
async def countdown(ctx: Context, start: int = 3) -> str:
    """Count down from `start` to 1, sending a log message and a progress notification per step."""
    if not 1 <= start <= 100:
        raise ToolError(f"start must be between 1 and 100, got {start}")
    for step, value in enumerate(range(start, 0, -1), 1):
        if LogThreshold.allows("info"):
            await ctx.info(f"countdown: {value}", logger_name="demo")
        await ctx.report_progress(step, start, f"{value} left")
    return "liftoff"


@server.tool()
def fail(reason: str = "this tool always fails") -> str:
    """Always fail: the result comes back with isError set, as a tool failure does."""
    raise ToolError(reason)


@server.resource("demo://readme", name="readme", mime_type="text/markdown")
def readme() -> str:
    """What this server offers."""
    return README


@server.resource("demo://greeting/{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting for `name`."""
    return f"Hello, {name}!"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a short code review of a snippet."""
    return f"Please review this {language} code and point out one improvement:\n\n{code}"


def main() -> None:
    """Serve over stdio until stdin closes; Ctrl-C ends it quietly."""
    # Die of SIGINT like any tool, not with a KeyboardInterrupt traceback on stderr.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    server.run("stdio")


if __name__ == "__main__":
    main()
