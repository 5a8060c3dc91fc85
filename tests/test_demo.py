"""The built-in demo server (mcptape.servers.demo) and the `mcptape demo` tour."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import LoggingMessageNotificationParams

from mcptape.servers import demo
from tests.helpers.paths import MCPTAPE

T = TypeVar("T")
# The demo server uses logging, deprecated from protocol 2026-07-28 on, on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
DEMO_SERVER = StdioServerParameters(command=sys.executable, args=["-m", "mcptape.servers.demo"])


@pytest.fixture(autouse=True)
def reset_log_level() -> Iterator[None]:
    """In-process clients share the module's log threshold; each test starts from the default."""
    demo.LogThreshold.level = "debug"
    yield
    demo.LogThreshold.level = "debug"


def with_client(use: Callable[[Client], Awaitable[T]], server: Any = None, **options: Any) -> T:
    """Run ``use`` with a client connected to the demo server (in-process unless ``server`` is given)."""

    async def main() -> T:
        async with Client(demo.server if server is None else server, mode="legacy", **options) as client:
            return await use(client)

    return anyio.run(main)


def test_tools_are_listed_with_schemas() -> None:
    async def use(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in with_client(use)}
    assert list(tools) == ["add", "echo", "weather", "countdown", "fail"]
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["weather"].output_schema is not None
    assert tools["weather"].output_schema["required"] == [
        "city",
        "temperature_c",
        "conditions",
        "humidity_percent",
    ]


def test_add_and_echo_answer_with_text_and_structured_content() -> None:
    async def use(client: Client) -> Any:
        return await client.call_tool("add", {"a": 2, "b": 40}), await client.call_tool(
            "echo", {"text": "héllo"}
        )

    added, echoed = with_client(use)
    assert added.content[0].text == "42"
    assert added.structured_content == {"result": 42}
    assert echoed.structured_content == {"result": "héllo"}
    assert not added.is_error and not echoed.is_error


def test_weather_is_structured_and_the_same_for_the_same_city() -> None:
    async def use(client: Client) -> Any:
        cities = ["Lisbon", "lisbon ", "Oslo"]
        return [(await client.call_tool("weather", {"city": c})).structured_content for c in cities]

    lisbon, lisbon_again, oslo = with_client(use)
    assert lisbon == {"city": "Lisbon", "temperature_c": -1, "conditions": "foggy", "humidity_percent": 45}
    assert {k: v for k, v in lisbon_again.items() if k != "city"} == {
        k: v for k, v in lisbon.items() if k != "city"
    }
    assert oslo != lisbon


def test_countdown_sends_a_log_message_and_progress_per_step() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    steps: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total, message))

    async def use(client: Client) -> Any:
        return await client.call_tool("countdown", {"start": 3}, progress_callback=on_progress)

    result = with_client(use, logging_callback=on_log)
    assert result.structured_content == {"result": "liftoff"}
    assert [(log.level, log.logger, log.data) for log in logs] == [
        ("info", "demo", "countdown: 3"),
        ("info", "demo", "countdown: 2"),
        ("info", "demo", "countdown: 1"),
    ]
    assert steps == [(1, 3, "3 left"), (2, 3, "2 left"), (3, 3, "1 left")]


def test_set_level_above_info_silences_the_countdown_logs() -> None:
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def use(client: Client) -> Any:
        assert "logging" in client.server_capabilities.model_dump(exclude_none=True)
        await client.set_logging_level("warning")
        return await client.call_tool("countdown", {"start": 2})

    assert with_client(use, logging_callback=on_log).structured_content == {"result": "liftoff"}
    assert logs == []


def test_fail_returns_an_error_result_not_a_protocol_error() -> None:
    async def use(client: Client) -> Any:
        return await client.call_tool("fail", {"reason": "on purpose"}), await client.call_tool(
            "countdown", {"start": 0}
        )

    failed, out_of_range = with_client(use)
    assert failed.is_error
    assert failed.content[0].text == "Error executing tool fail: on purpose"
    assert out_of_range.is_error
    assert "start must be between 1 and 100, got 0" in out_of_range.content[0].text


def test_readme_resource_and_greeting_template() -> None:
    async def use(client: Client) -> Any:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        readme = (await client.read_resource("demo://readme")).contents[0]
        greeting = (await client.read_resource("demo://greeting/Ada")).contents[0]
        return resources, templates, readme, greeting

    resources, templates, readme, greeting = with_client(use)
    assert [(str(r.uri), r.mime_type) for r in resources] == [("demo://readme", "text/markdown")]
    assert [t.uri_template for t in templates] == ["demo://greeting/{name}"]
    assert readme.text == demo.README
    assert readme.text.startswith("# mcptape demo server\n")
    assert (greeting.text, greeting.mime_type) == ("Hello, Ada!", "text/plain")


def test_review_prompt_takes_code_and_language() -> None:
    async def use(client: Client) -> Any:
        listed = (await client.list_prompts()).prompts
        got = await client.get_prompt("review", {"code": "x = 1", "language": "rust"})
        return listed, got

    listed, got = with_client(use)
    assert [(p.name, [(a.name, a.required) for a in p.arguments or []]) for p in listed] == [
        ("review", [("code", True), ("language", False)])
    ]
    assert len(got.messages) == 1
    assert got.messages[0].role == "user"
    assert (
        got.messages[0].content.text == "Please review this rust code and point out one improvement:\n\nx = 1"
    )


@pytest.mark.slow
def test_demo_server_runs_as_a_module_over_stdio_with_a_quiet_stderr(tmp_path: Path) -> None:
    errors = tmp_path / "stderr.txt"

    async def main() -> tuple[str, str, Any]:
        with errors.open("w") as errlog:
            async with Client(stdio_client(DEMO_SERVER, errlog=errlog), mode="legacy") as client:
                info = client.server_info
                assert info is not None
                failed = await client.call_tool("fail", {})
                return info.name, info.version, failed

    name, version, failed = anyio.run(main)
    assert (name, version) == ("mcptape-demo", "1.0.0")
    assert failed.is_error
    # No deprecation warnings or per-failure log lines: a recording's stderr events stay meaningful.
    assert errors.read_text() == ""


@pytest.mark.slow
def test_demo_server_speaks_the_2026_protocol_too() -> None:
    async def main() -> Any:
        async with Client(DEMO_SERVER, mode="auto", log_level="info") as client:
            return client.protocol_version, await client.call_tool("add", {"a": 1, "b": 1})

    version, result = anyio.run(main)
    assert version == "2026-07-28"
    assert result.structured_content == {"result": 2}


@pytest.mark.slow
def test_demo_command_records_a_session_named_demo_with_its_tool_calls(tmp_path: Path) -> None:
    db = tmp_path / "tour.db"
    result = subprocess.run(
        [*MCPTAPE, "demo", "--db", str(db)], capture_output=True, text=True, timeout=90, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'tools/call add {"a": 2, "b": 3}' in result.stdout
    assert "mcptape sessions --db" in result.stdout
    with sqlite3.connect(db) as conn:
        sessions = conn.execute("select id, name, mode from sessions").fetchall()
        assert [(name, mode) for _, name, mode in sessions] == [("demo", "record")]
        calls = conn.execute(
            "select text from frames where session_id = ? and method = 'tools/call' and direction = 'c2s'",
            (sessions[0][0],),
        ).fetchall()
    assert len(calls) == 5
    assert any('"fail"' in text for (text,) in calls)


@pytest.mark.slow
def test_demo_command_fails_in_one_line_when_the_session_cannot_run(tmp_path: Path) -> None:
    # A directory cannot be a database: the recorder refuses it and the tour must say it failed.
    result = subprocess.run(
        [*MCPTAPE, "demo", "--quiet", "--db", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 1
    assert "mcptape: error: the demo session failed" in result.stderr.splitlines()[-1]
