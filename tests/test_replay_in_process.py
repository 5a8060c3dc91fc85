"""Serving a recording in process: a session recorded from the demo server, played back by the tape server.

The recording is made in process (the one assembly, the demo server on the loop, a
SQLite file); it is loaded as `mcptape serve` loads it and played by
:class:`mcptape.replay.mock.TapeServer` as the server-facing link of a ``serve`` session,
to a client on a memory link. What the live server answered comes back for the same
request, identical requests get their answers in recorded order, and a request the
recording does not hold gets an error naming the nearest recorded one. The same through
real `mcptape serve` and `replay` processes is in test_serve.py and test_replay.py (slow).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcptape.assemble import SessionPlan
from mcptape.proxy.links.memory import MemoryPeer
from mcptape.replay.mock import TapeServer
from mcptape.replay.tape import Tape, load_session
from mcptape.store import open_store
from tests.helpers.memory_client import answer, handshake, record_in_process, run_session

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def call(rpc_id: int, name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rpc_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()


LIVE = [
    call(1, "add", {"a": 2, "b": 40}),
    call(2, "weather", {"city": "Lisbon"}),
    call(3, "add", {"a": 2, "b": 40}),
]


@pytest.fixture(scope="module")
def tape(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tape, list[dict[str, Any]]]:
    """The demo server's answers to LIVE, recorded in process, loaded as serve loads a session."""
    db = tmp_path_factory.mktemp("tape") / "rec.db"

    async def client(peer: MemoryPeer) -> list[dict[str, Any]]:
        await handshake(peer)
        return [await answer(peer, request) for request in LIVE]

    _, live = record_in_process(db, client, name="demo")
    store = open_store(str(db))
    try:
        return load_session(store, "demo"), live
    finally:
        store.close()


def serve(tape: Tape, scenario: Any) -> tuple[TapeServer, Any]:
    servers: list[TapeServer] = []

    def server() -> TapeServer:
        servers.append(TapeServer(tape))
        return servers[0]

    plan = SessionPlan("serve", "stdio->tape", "in-process tape", name="served")
    _, result = run_session(plan, server, scenario)
    return servers[0], result


def test_the_recording_holds_the_live_exchanges(tape: tuple[Tape, list[dict[str, Any]]]) -> None:
    recorded, live = tape
    assert [e.method for e in recorded.exchanges] == ["initialize", "tools/call", "tools/call", "tools/call"]
    assert live[0]["result"]["structuredContent"] == {"result": 42}


def test_the_same_requests_get_the_live_answers(tape: tuple[Tape, list[dict[str, Any]]]) -> None:
    recorded, live = tape

    async def client(peer: MemoryPeer) -> list[dict[str, Any]]:
        hello = await handshake(peer)
        assert hello["result"]["serverInfo"]["name"] == "mcptape-demo"
        return [await answer(peer, request) for request in LIVE]

    server, played = serve(recorded, client)
    assert [p["result"] for p in played] == [live_answer["result"] for live_answer in live]
    assert server.misses == []
    assert all(entry.used for entry in server.book.entries)


def test_answers_carry_the_ids_the_client_sent_now(tape: tuple[Tape, list[dict[str, Any]]]) -> None:
    recorded, live = tape

    async def client(peer: MemoryPeer) -> dict[str, Any]:
        await handshake(peer)
        return await answer(peer, call(1, "weather", {"city": "Lisbon"}).replace(b'"id": 1', b'"id": "w-7"'))

    _, played = serve(recorded, client)
    assert played["id"] == "w-7" and played["result"] == live[1]["result"]


def test_a_request_the_recording_lacks_gets_an_error_naming_the_nearest(
    tape: tuple[Tape, list[dict[str, Any]]],
) -> None:
    recorded, _ = tape

    async def client(peer: MemoryPeer) -> dict[str, Any]:
        await handshake(peer)
        return await answer(peer, call(9, "weather", {"city": "Paris"}))

    server, missed = serve(recorded, client)
    message = missed["error"]["message"]
    assert "no recorded response matches this tools/call request" in message
    assert "differs at /params/arguments/city" in message
    assert len(server.misses) == 1


DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


@pytest.mark.parametrize(
    ("request_", "rpc_id", "says"),
    [
        # An id that is a lone surrogate: no UTF-8 holds it, and the answer was never
        # written (UnicodeEncodeError in a task).
        (
            call(9, "weather", {"city": "Paris"}).replace(b'"id": 9', b'"id": "\\ud800"'),
            "\ud800",
            "differs at /params/arguments/city",
        ),
        # A request too deep to parse was never answered.
        (
            b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":' + DEEP + b"}",
            9,
            "no recorded response matches this tools/call request: it is nested too deep to read",
        ),
    ],
    ids=["lone-surrogate-id", "nested-too-deep"],
)
def test_a_hostile_request_gets_its_error_answer(
    tape: tuple[Tape, list[dict[str, Any]]], request_: bytes, rpc_id: Any, says: str
) -> None:
    recorded, _ = tape

    async def client(peer: MemoryPeer) -> dict[str, Any]:
        await handshake(peer)
        return await answer(peer, request_)

    _, missed = serve(recorded, client)
    assert missed["id"] == rpc_id and says in missed["error"]["message"]


def test_a_line_nested_too_deep_to_read_is_a_parse_error_and_the_session_goes_on(
    tape: tuple[Tape, list[dict[str, Any]]],
) -> None:
    # Its id, if any, is out of reach: answered as a parse error (it raised RecursionError).
    recorded, live = tape

    async def client(peer: MemoryPeer) -> tuple[dict[str, Any], dict[str, Any]]:
        await handshake(peer)
        return await answer(peer, b'{"id":' + DEEP + b"}"), await answer(peer, LIVE[0])

    _, (parse_error, after) = serve(recorded, client)
    assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
    assert "nested too deep to read" in parse_error["error"]["message"]
    assert after == live[0]
