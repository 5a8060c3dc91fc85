"""Client sessions run with the real `mcp` SDK client, and the servers and answers they use.

Each scenario takes what the SDK's ``Client`` takes (stdio parameters, a URL, a transport)
and returns the results as plain JSON values, so the same session run directly, through
mcptape and from a replay can be compared with ``==``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from tests.helpers.paths import MCPTAPE, ROOT

DEMO = [sys.executable, "-m", "mcptape.servers.demo"]
ASK_NAME = [sys.executable, str(ROOT / "tests" / "servers" / "ask_name.py")]
TRIP_PLANNER = [sys.executable, str(ROOT / "tests" / "servers" / "trip_planner.py")]
# A sampling answer rules give in tests (`--handle-sampling`).
SAMPLE = {
    "role": "assistant",
    "content": {"type": "text", "text": "canned by mcptape"},
    "model": "tape-model",
}


def dump(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def direct(server: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=server[0], args=server[1:])


def record_params(db: Path, server: list[str], *options: str) -> StdioServerParameters:
    """`mcptape record --db DB OPTIONS... -- SERVER...` as the SDK client's stdio server."""
    argv = [*MCPTAPE, "record", "--db", str(db), *options, "--", *server]
    return StdioServerParameters(command=argv[0], args=argv[1:])


async def sampling_hello(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="canned hello"), model="test-model"
    )


async def accept_ada(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def project_root(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/project", name="project")])


def answering_client(params: Any) -> Client:
    """A 2025 client that answers sampling (canned hello), elicitation (decline) and roots (one)."""
    return Client(
        params,
        mode="legacy",
        sampling_callback=sampling_hello,
        elicitation_callback=decline,
        list_roots_callback=project_root,
    )


def run_everything_scenario(params: Any) -> dict[str, Any]:
    """server-everything's tools, resources, prompts and its three server requests, answered by the client."""

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with answering_client(params) as client:
            tools = await client.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["echo"] = dump(await client.call_tool("echo", {"message": 'héllo \u2028 ✓ "q"'}))
            out["sum"] = dump(await client.call_tool("get-sum", {"a": 2, "b": 3.5}))
            out["structured"] = dump(
                await client.call_tool("get-structured-content", {"location": "Chicago"})
            )
            out["read"] = dump(await client.read_resource("demo://resource/static/document/architecture.md"))
            out["prompt"] = dump(await client.get_prompt("args-prompt", {"city": "Paris", "state": "TX"}))
            out["sampling"] = dump(
                await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 10})
            )
            out["elicitation"] = dump(await client.call_tool("trigger-elicitation-request", {}))
            out["roots"] = dump(await client.call_tool("get-roots-list", {}))
            out["unknown"] = dump(await client.call_tool("no-such-tool", {}))
            await client.send_ping()
        return out

    return anyio.run(main)


def run_modern_scenario(params: Any) -> dict[str, Any]:
    """The demo server in a 2026-07-28 session (no initialize): the revision, tools, a call, a read."""

    async def main() -> dict[str, Any]:
        async with Client(params, mode="auto") as client:
            return {
                "version": client.protocol_version,
                "tools": [t.name for t in (await client.list_tools()).tools],
                "add": dump(await client.call_tool("add", {"a": 20, "b": 22})),
                "readme": dump(await client.read_resource("demo://readme")),
            }

    return anyio.run(main)


def demo_scenario(params: Any) -> dict[str, Any]:
    """A client session touching tools (plain, structured, logging with progress), resources, prompts."""

    async def main() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            return {
                "tools": [t.name for t in (await client.list_tools()).tools],
                "add": dump(await client.call_tool("add", {"a": 2, "b": 40})),
                "weather": dump(await client.call_tool("weather", {"city": "Lisbon"})),
                "countdown": dump(await client.call_tool("countdown", {"start": 2})),
                "readme": dump(await client.read_resource("demo://readme")),
                "prompt": dump(await client.get_prompt("review", {"code": "x = 1"})),
            }

    return anyio.run(main)


def server_asks_scenario(params: Any) -> dict[str, Any]:
    """server-everything's sampling, elicitation (declined) and roots requests, with one plain call between."""

    async def main() -> dict[str, Any]:
        async with answering_client(params) as client:
            return {
                "elicitation": dump(await client.call_tool("trigger-elicitation-request", {})),
                "echo": dump(await client.call_tool("echo", {"message": "hi"})),
                "sampling": dump(
                    await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 10})
                ),
                "roots": dump(await client.call_tool("get-roots-list", {})),
            }

    return anyio.run(main)


def ask_name_scenario(params: Any) -> dict[str, Any]:
    """tests/servers/ask_name.py in a 2026-07-28 session: its greet tool asks for a name (Ada)."""

    async def main() -> dict[str, Any]:
        async with Client(params, mode="auto", elicitation_callback=accept_ada) as client:
            return {
                "version": client.protocol_version,
                "greet": dump(await client.call_tool("greet", {"greeting": "Hello"})),
            }

    return anyio.run(main)


def record(db: Path, name: str, server: list[str], scenario: Any = demo_scenario) -> dict[str, Any]:
    """Run ``scenario`` through `mcptape record --name NAME` into ``db``; returns the live results."""
    return dict(scenario(record_params(db, server, "--name", name)))
