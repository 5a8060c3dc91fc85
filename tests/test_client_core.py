"""The client core through a real relay: replies, errors, timeouts reset by progress, server requests.

The server here is Python code playing the far end of an in-memory link (the relay's
test pair), so timing and misbehaviour can be scripted; tests/test_client_session.py
runs the same session against real server processes.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import orjson
import pytest

from mcptape.client import errors
from mcptape.client.core import Reply, Timeouts
from mcptape.client.errors import (
    ConnectionLost,
    RequestTimeout,
    ServerApplicationError,
    ServerProtocolError,
    exit_status,
    server_error,
)
from mcptape.client.retry import with_retries
from mcptape.proxy.links.memory import MemoryLink
from tests.helpers.fake_server import fake_session, reply


def test_result_and_error_replies_map_to_the_taxonomy() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        if message["method"] == "tools/list":
            await reply(link, message["id"], {"tools": []})
        elif message["method"] == "nope":
            await reply(link, message["id"], error={"code": -32601, "message": "Method not found"})
        else:
            await reply(link, message["id"], error={"code": 7, "message": "boom", "data": {"x": 1}})

    async def main() -> None:
        session, _, _ = fake_session(script)
        async with session:
            assert await session.core.request("tools/list") == {"tools": []}
            with pytest.raises(ServerProtocolError) as protocol:
                await session.core.request("nope")
            with pytest.raises(ServerApplicationError) as application:
                await session.core.request("tools/call", {"name": "x"})
        assert protocol.value.code == -32601 and exit_status(protocol.value) == 2
        assert application.value.as_dict() == {
            "category": "application",
            "code": 7,
            "message": "boom",
            "data": {"x": 1},
        }

    asyncio.run(main())


def test_progress_notifications_reset_the_request_timeout_and_silence_cancels() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        if message["method"] == "slow-with-progress":
            token = message["params"]["_meta"]["progressToken"]
            for step in range(4):  # 0.6 s in all, past the 0.3 s request timeout
                await asyncio.sleep(0.15)
                note = {"progressToken": token, "progress": step}
                await link.peer.send(
                    orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})
                )
            await reply(link, message["id"], {"done": True})
        # "silent" never gets an answer

    async def main() -> None:
        session, seen, _ = fake_session(script, timeouts=Timeouts(connect=5, request=0.3, request_max=5))
        async with session:
            assert await session.core.request("slow-with-progress", progress=True) == {"done": True}
            with pytest.raises(RequestTimeout):
                await session.core.request("silent")
            await asyncio.sleep(0.05)
        cancels = [m for m in seen if m.get("method") == "notifications/cancelled"]
        assert cancels and cancels[0]["params"]["requestId"] == 3
        assert len(session.core.notifications) == 4

    asyncio.run(main())


def test_the_handshake_is_bounded_by_the_connect_timeout_not_the_request_timeout() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        await reply(link, message["id"], {})

    async def main() -> None:
        # A server that starts slowly (node under load) must not fail the request timeout.
        session, _, _ = fake_session(script, hello_delay=0.5, timeouts=Timeouts(connect=5, request=0.2))
        async with session:
            assert session.hello is not None and session.hello.protocol_version == "2025-11-25"
            assert await session.core.request("ping") == {}

    asyncio.run(main())


def test_progress_cannot_extend_a_request_past_its_maximum() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        token = message["params"]["_meta"]["progressToken"]
        for step in range(20):
            await asyncio.sleep(0.1)
            note = {"progressToken": token, "progress": step}
            await link.peer.send(
                orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})
            )

    async def main() -> None:
        session, _, _ = fake_session(script, timeouts=Timeouts(connect=5, request=0.3, request_max=0.6))
        async with session:
            with pytest.raises(RequestTimeout, match=r"after 0\.6"):
                await session.core.request("endless", progress=True)

    asyncio.run(main())


def test_server_requests_are_answered_by_the_handler_and_captured_with_logs() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        if message["method"] == "tools/call":
            log = {"level": "info", "data": "working"}
            await link.peer.send(
                orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            )
            await link.peer.send(orjson.dumps({"jsonrpc": "2.0", "id": "s1", "method": "ping"}))
            ask = {
                "jsonrpc": "2.0",
                "id": "s2",
                "method": "elicitation/create",
                "params": {"message": "name?"},
            }
            await link.peer.send(orjson.dumps(ask))
            answers = [orjson.loads(await link.peer.next()) for _ in range(2)]
            await reply(link, message["id"], {"content": [], "answers": answers})

    def handler(method: str, params: Any, tool: str | None) -> Reply:
        return Reply(result={"action": "decline", "tool": tool}, by="default")

    async def main() -> None:
        session, _, _ = fake_session(script, handler=handler)
        async with session:
            session.core.tool_in_flight = "ask"
            result = await session.core.request("tools/call", {"name": "ask"})
        answers = {a["id"]: a["result"] for a in result["answers"]}
        assert answers == {"s1": {}, "s2": {"action": "decline", "tool": "ask"}}
        assert session.core.logs == [{"level": "info", "data": "working"}]
        requests = [r.as_dict() for r in session.core.server_requests]
        assert [(r["method"], r["answeredBy"]) for r in requests] == [
            ("ping", "mcptape"),
            ("elicitation/create", "default"),
        ]

    asyncio.run(main())


def test_a_server_that_goes_away_fails_the_request_in_flight_as_connection_lost() -> None:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        link.peer.close()

    async def main() -> None:
        states: list[str] = []
        session, _, _ = fake_session(script, on_state=lambda state, detail: states.append(state))
        async with session:
            with pytest.raises(ConnectionLost, match="before answering tools/list") as lost:
                await session.core.request("tools/list")
            await asyncio.sleep(0.05)
        assert lost.value.category == "transport" and exit_status(lost.value) == 1
        assert states == ["connecting", "connected", "error"]

    asyncio.run(main())


def test_server_error_codes_split_between_protocol_and_application() -> None:
    assert isinstance(server_error({"code": -32602, "message": "bad"}), ServerProtocolError)
    assert isinstance(server_error({"code": -32000, "message": "bad"}), ServerApplicationError)
    assert server_error("nonsense").category == "protocol"
    assert exit_status(errors.ClientTimeout("t")) == 124
    assert exit_status(errors.ToolError("t", fail=False)) == 0
    assert exit_status(errors.ToolError("t", fail=True)) == 2
    assert exit_status(errors.CapabilityError("c")) == 1


def test_every_error_class_is_drawn_in_the_taxonomy_tree() -> None:
    doc = errors.__doc__ or ""
    classes = [
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.McptapeError)
    ]
    assert len(classes) >= 15
    for name in classes:
        assert f"── {name}" in doc or (name == "McptapeError" and doc.lstrip().count(name) >= 1), name


def test_retries_back_off_1_2_4_seconds_on_refused_connections_only() -> None:
    waited: list[float] = []
    tries: list[int] = []

    async def sleep(delay: float) -> None:
        waited.append(delay)

    async def refused() -> str:
        tries.append(1)
        if len(tries) < 4:
            raise ConnectionRefusedError("refused")
        return "open"

    async def missing() -> str:
        raise FileNotFoundError("no such command")

    async def main() -> None:
        assert await with_retries(refused, sleep=sleep) == "open"
        assert waited == [1.0, 2.0, 4.0]
        waited.clear()
        with pytest.raises(FileNotFoundError):
            await with_retries(missing, sleep=sleep)
        assert waited == []
        tries.clear()
        with pytest.raises(ConnectionRefusedError):
            await with_retries(refused, (1.0, 2.0), sleep=sleep)

    asyncio.run(main())
