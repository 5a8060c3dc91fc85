"""The injector addon in a real relay over in-memory links: what reaches each side, what is recorded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.proxy.addonmanager import AddonManager, Flow, SessionContext
from mcptape.proxy.addons.injector import Injector, declare_capabilities
from mcptape.proxy.links.memory import memory_pair
from mcptape.proxy.relay import Relay
from mcptape.rules.rules import Rules
from mcptape.wire.frame import Frame

SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "canned"}, "model": "m"}


class Tape:
    """Collects every frame the relay records (frame_done), in order."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def frame_done(self, flow: Flow) -> None:
        self.frames.append(flow.frame)
        if flow.replacement is not None:
            self.frames.append(flow.replacement)

    def rows(self) -> list[tuple[str, str | None, Any]]:
        return [(f.direction, f.origin, f.message) for f in self.frames]


def msg(data: bytes) -> Any:
    return json.loads(data)


Scenario = Callable[[Any, Any, Relay], Awaitable[None]]


def run(rules: Rules, scenario: Scenario, *, declare: bool = False) -> Tape:
    """Run ``scenario(client_peer, server_peer, relay)`` through a relay with the injector."""
    tape = Tape()

    async def main() -> None:
        client, server = memory_pair()
        injector = Injector(rules, declare=declare)
        relay = Relay(
            client, server, AddonManager([tape, injector]), SessionContext(None, "test", "mem", "mem")
        )
        injector.use_relay(relay)
        task = asyncio.ensure_future(relay.run())
        await asyncio.sleep(0)
        try:
            await scenario(client.peer, server.peer, relay)
        finally:
            client.peer.close()
            await asyncio.wait_for(task, 5)

    asyncio.run(main())
    return tape


def request(rid: Any, method: str, params: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return orjson.dumps(body)


def test_a_matched_server_request_is_answered_by_mcptape_and_never_reaches_the_client() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(1, "tools/call", {"name": "ask", "arguments": {}}))
        assert msg(await server.next())["id"] == 1
        await server.send(request(0, "sampling/createMessage", {"messages": []}))
        answer = msg(await server.next())
        assert answer == {"jsonrpc": "2.0", "id": 0, "result": SAMPLE}
        await server.send(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
        assert msg(await client.next())["id"] == 1
        assert all(msg(f).get("method") != "sampling/createMessage" for f in client.received)

    tape = run(Rules.from_options(handle_sampling=json.dumps(SAMPLE)), scenario)
    rows = tape.rows()
    assert (
        "s2c",
        "server",
        {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {"messages": []}},
    ) in rows
    assert ("c2s", "proxy", {"jsonrpc": "2.0", "id": 0, "result": SAMPLE}) in rows


def test_rules_see_the_tool_in_flight_and_unmatched_requests_reach_the_client(tmp_path: Any) -> None:
    rules_file = tmp_path / "r.json"
    rules_file.write_text(
        json.dumps([{"method": "elicitation/create", "tool": "book", "error": {"code": -7, "message": "no"}}])
    )

    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(1, "tools/call", {"name": "book"}))
        await server.next()
        await server.send(request("e1", "elicitation/create", {"message": "?"}))
        assert msg(await server.next()) == {
            "jsonrpc": "2.0",
            "id": "e1",
            "error": {"code": -7, "message": "no"},
        }
        await server.send(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        await client.next()
        # Another tool: the rule does not match and the client answers.
        await client.send(request(2, "tools/call", {"name": "other"}))
        await server.next()
        await server.send(request("e2", "elicitation/create", {"message": "?"}))
        assert msg(await client.next())["id"] == "e2"
        await client.send(b'{"jsonrpc":"2.0","id":"e2","result":{"action":"decline"}}')
        assert msg(await server.next()) == {"jsonrpc": "2.0", "id": "e2", "result": {"action": "decline"}}

    tape = run(Rules.from_options(inject_file=str(rules_file)), scenario)
    origins = [
        (f.direction, f.origin)
        for f in tape.frames
        if (f.message or {}).get("id") in ("e1", "e2") and "method" not in f.message
    ]
    assert origins == [("c2s", "proxy"), ("c2s", "client")]


def test_a_batch_element_is_answered_and_the_rest_forwarded() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        batch = b"[" + request(5, "roots/list") + b"," + request(6, "ping") + b"]"
        await server.send(batch)
        assert msg(await server.next()) == [
            {"jsonrpc": "2.0", "id": 5, "result": {"roots": [{"uri": "file:///r"}]}}
        ]
        assert msg(await client.next()) == [{"jsonrpc": "2.0", "id": 6, "method": "ping"}]

    run(Rules.from_options(roots=["file:///r"]), scenario)


def test_own_request_reply_is_recorded_once_and_not_forwarded() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        pending = asyncio.ensure_future(relay.request("c2s", "ping", {}))
        sent = msg(await server.next())
        assert sent["id"] == "mcptape-1"
        await server.send(b'{"jsonrpc":"2.0","id":"mcptape-1","result":{}}')
        reply = await asyncio.wait_for(pending, 5)
        assert reply.message == {"jsonrpc": "2.0", "id": "mcptape-1", "result": {}}
        await asyncio.sleep(0.05)
        assert client.received == []

    tape = run(Rules(), scenario)
    replies = [f for f in tape.frames if f.direction == "s2c"]
    assert len(replies) == 1 and replies[0].meta == {"forwarded": False}


INPUT = {
    "resultType": "input_required",
    "inputRequests": {
        "who": {
            "method": "elicitation/create",
            "params": {
                "message": "Who?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        },
        "idea": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
    },
    "requestState": "opaque-ÿ-state==",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_input_required_is_retried_by_mcptape_and_the_client_sees_only_the_final_result() -> None:
    rules = Rules.from_options(
        handle_sampling=json.dumps(SAMPLE),
        handle_elicitation='{"action": "accept", "content": {"name": "Ada"}}',
    )

    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(7, "tools/call", {"name": "plan", "arguments": {"a": 1}, "_meta": META}))
        assert msg(await server.next())["id"] == 7
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": INPUT}))
        retry = msg(await server.next())
        assert retry["id"] == "mcptape-1" and retry["method"] == "tools/call"
        assert retry["params"] == {
            "name": "plan",
            "arguments": {"a": 1},
            "_meta": META,
            "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}, "idea": SAMPLE},
            "requestState": "opaque-ÿ-state==",
        }
        # A second round: mcptape answers it too, echoing the new state.
        second = {
            "resultType": "input_required",
            "inputRequests": {"idea2": INPUT["inputRequests"]["idea"]},
            "requestState": "s2",
        }
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": "mcptape-1", "result": second}))
        retry2 = msg(await server.next())
        assert retry2["id"] == "mcptape-2"
        assert retry2["params"]["requestState"] == "s2" and set(retry2["params"]["inputResponses"]) == {
            "idea2"
        }
        final = {"content": [{"type": "text", "text": "done"}], "resultType": "complete"}
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": "mcptape-2", "result": final}))
        assert msg(await client.next()) == {"jsonrpc": "2.0", "id": 7, "result": final}
        await asyncio.sleep(0.05)
        assert len(client.received) == 1
        # The client's request is settled: a server that dies now owes it nothing.
        assert not relay._pending

    tape = run(rules, scenario)
    kinds = [(f.direction, f.origin, (f.message or {}).get("id")) for f in tape.frames]
    assert kinds == [
        ("c2s", "client", 7),
        ("s2c", "server", 7),
        ("c2s", "proxy", "mcptape-1"),
        ("s2c", "server", "mcptape-1"),
        ("c2s", "proxy", "mcptape-2"),
        ("s2c", "server", "mcptape-2"),
        ("s2c", "proxy", 7),
    ]


def test_input_required_the_rules_cannot_answer_goes_to_the_client() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(1, "tools/call", {"name": "plan"}))
        await server.next()
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": INPUT}))
        assert msg(await client.next())["result"] == INPUT

    run(Rules.from_options(roots=["file:///r"]), scenario)


def test_a_round_answered_in_part_goes_to_the_client_and_mcptape_completes_its_retry() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(1, "tools/call", {"name": "plan"}))
        await server.next()
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": INPUT}))
        # The client is asked only what the rules cannot answer.
        asked = msg(await client.next())
        assert asked["id"] == 1
        assert asked["result"]["inputRequests"] == {"who": INPUT["inputRequests"]["who"]}
        assert asked["result"]["requestState"] == INPUT["requestState"]
        mine = {"who": {"action": "accept", "content": {"name": "Bo"}}}
        retry = {"name": "plan", "inputResponses": mine, "requestState": INPUT["requestState"]}
        await client.send(request(2, "tools/call", retry))
        # The server gets the client's retry with mcptape's answers added.
        got = msg(await server.next())
        assert got["id"] == 2
        assert got["params"]["inputResponses"] == {**mine, "idea": {**SAMPLE}}
        assert got["params"]["requestState"] == INPUT["requestState"]
        await server.send(b'{"jsonrpc":"2.0","id":2,"result":{"content":[],"resultType":"complete"}}')
        assert msg(await client.next())["id"] == 2

    tape = run(Rules.from_options(handle_sampling=json.dumps(SAMPLE)), scenario)
    edits = [(f.direction, f.origin, (f.message or {}).get("id")) for f in tape.frames if f.origin == "proxy"]
    assert edits == [("s2c", "proxy", 1), ("c2s", "proxy", 2)]


def test_a_later_round_the_rules_cannot_answer_reaches_the_client_under_its_id() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(3, "prompts/get", {"name": "p"}))
        await server.next()
        first = {
            "resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list"}},
            "requestState": "x",
        }
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": first}))
        assert msg(await server.next())["params"]["inputResponses"] == {
            "r": {"roots": [{"uri": "file:///w"}]}
        }
        later = {
            "resultType": "input_required",
            "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
            "requestState": "y",
        }
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": "mcptape-1", "result": later}))
        assert msg(await client.next()) == {"jsonrpc": "2.0", "id": 3, "result": later}

    run(Rules.from_options(roots=["file:///w"]), scenario)


def test_declare_adds_missing_capabilities_to_the_forwarded_handshake_as_a_proxy_edit() -> None:
    init = request(
        0,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "c", "version": "1"},
        },
    )

    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(init)
        forwarded = msg(await server.next())
        assert forwarded["params"]["capabilities"] == {"roots": {"listChanged": True}, "sampling": {}}

    tape = run(Rules.from_options(handle_sampling="auto", roots=["file:///x"]), scenario, declare=True)
    assert [(f.origin, f.data) for f in tape.frames[:1]] == [("client", init)]
    assert tape.frames[1].origin == "proxy"


def test_declare_capabilities_edits_initialize_and_2026_meta_only_when_something_is_missing() -> None:
    caps = {"sampling": {}, "elicitation": {}}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"capabilities": {"sampling": {"tools": {}}}},
    }
    edited = declare_capabilities(init, caps)
    assert edited is not None and edited["params"]["capabilities"] == {
        "sampling": {"tools": {}},
        "elicitation": {},
    }
    assert declare_capabilities(init, {"sampling": {}}) is None
    modern = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": dict(META)}}
    edited = declare_capabilities(modern, caps)
    assert edited is not None
    assert edited["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == caps
    assert edited["params"]["name"] == "x"
    assert declare_capabilities({"jsonrpc": "2.0", "id": 2, "method": "ping"}, caps) is None
    assert declare_capabilities("not a message", caps) is None


def test_a_later_round_answered_in_part_reaches_the_client_trimmed() -> None:
    async def scenario(client: Any, server: Any, relay: Relay) -> None:
        await client.send(request(3, "prompts/get", {"name": "p"}))
        await server.next()
        first = {
            "resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list"}},
            "requestState": "x",
        }
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": first}))
        await server.next()
        sampling = {"method": "sampling/createMessage", "params": {}}
        later = {
            "resultType": "input_required",
            "inputRequests": {"s": sampling, "r2": {"method": "roots/list"}},
            "requestState": "y",
        }
        await server.send(orjson.dumps({"jsonrpc": "2.0", "id": "mcptape-1", "result": later}))
        to_client = msg(await client.next())
        assert to_client == {"jsonrpc": "2.0", "id": 3, "result": {**later, "inputRequests": {"s": sampling}}}
        await client.send(
            request(4, "prompts/get", {"name": "p", "inputResponses": {"s": SAMPLE}, "requestState": "y"})
        )
        assert msg(await server.next())["params"]["inputResponses"] == {
            "s": SAMPLE,
            "r2": {"roots": [{"uri": "file:///w"}]},
        }

    run(Rules.from_options(roots=["file:///w"]), scenario)
