"""Clients of the stateless pool never see or touch each other's traffic: the same request id or
progress token from two clients at once, and a cancellation of one, reach only their own."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from mcptape.gateway.app import GatewayConfig
from mcptape.gateway.poolids import PoolIds
from mcptape.proxy.http.sse import SseParser
from mcptape.wire.frame import Frame
from tests.helpers.inprocess import running_gateway
from tests.servers import paced

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "pool-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def paced_call(rid: Any, label: str, steps: int, pause: float, token: Any = "t") -> dict[str, Any]:
    arguments = {"steps": steps, "pause": pause, "label": label}
    params = {"name": "paced", "arguments": arguments, "_meta": {**META, "progressToken": token}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def _call(http: aiohttp.ClientSession, url: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    headers = {**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "paced"}
    parser = SseParser()
    got: list[dict[str, Any]] = []
    async with http.post(url, json=message, headers=headers) as response:
        assert response.status == 200, await response.text()
        async for chunk in response.content.iter_any():
            got += [json.loads(e.data) for e in parser.feed(chunk) if e.event == "message" and e.data]
    return got


def _pool(scenario: Any) -> Any:
    async def main() -> Any:
        config = GatewayConfig(registry={}, token=None)
        async with running_gateway(config, servers={"paced": paced.server}) as g:
            return await scenario(g.url("paced"))

    return asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("b_id", [2, 1])
def test_two_clients_with_the_same_progress_token_and_id_each_get_their_own(b_id: int) -> None:
    async def scenario(url: str) -> list[list[dict[str, Any]]]:
        # Two clients, two connections, one pooled upstream.
        async with aiohttp.ClientSession() as a, aiohttp.ClientSession() as b:
            return list(
                await asyncio.gather(
                    _call(a, url, paced_call(1, "A", 5, 0.05)), _call(b, url, paced_call(b_id, "B", 5, 0.05))
                )
            )

    for label, rid, got in zip("AB", (1, b_id), _pool(scenario), strict=True):
        progress = [m["params"] for m in got if m.get("method") == "notifications/progress"]
        assert [p["message"] for p in progress] == [f"{label} {n}" for n in range(1, 6)]
        assert {p["progressToken"] for p in progress} == {"t"}  # their own token, as they sent it
        [answer] = [m for m in got if "result" in m]
        assert answer["id"] == rid and answer["result"]["content"][0]["text"] == label


def test_a_client_cancelling_its_id_does_not_touch_another_clients_request_with_that_id() -> None:
    async def scenario(url: str) -> list[dict[str, Any]]:
        async with aiohttp.ClientSession() as a, aiohttp.ClientSession() as b:
            a_call = asyncio.ensure_future(_call(a, url, paced_call(1, "A", 8, 0.05)))
            b_call = asyncio.ensure_future(_call(b, url, paced_call(1, "B", 8, 0.05)))
            await asyncio.sleep(0.15)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            async with b.post(url, json=cancel, headers=HEADERS) as response:
                assert response.status == 202
            b_call.cancel()
            return await a_call

    got = _pool(scenario)
    assert [m["params"]["message"] for m in got if "params" in m] == [f"A {n}" for n in range(1, 9)]
    assert [m["result"]["content"][0]["text"] for m in got if "result" in m] == ["A"]


def _frame(message: dict[str, Any]) -> Frame:
    return Frame(json.dumps(message, indent=1).encode(), "c2s")


def test_pool_ids_edit_only_ids_and_tokens_and_cancel_only_what_is_sure() -> None:
    ids = PoolIds()
    a = ids.take(_frame(paced_call(18446744073709551617, "A", 1, 0, token=7)), "s1", connection=1)
    b = ids.take(_frame(paced_call(1, "B", 1, 0)), "s1", connection=2)
    c = ids.take(_frame(paced_call(1, "C", 1, 0)), "s1", connection=3)
    sent = [json.loads(f.data) for f in (a, b, c)]
    assert [m["id"] for m in sent] == ["mcptape-pool-1", "mcptape-pool-2", "mcptape-pool-3"]
    assert [m["params"]["_meta"]["progressToken"] for m in sent] == [
        "mcptape-pool-1-progress",
        "mcptape-pool-2-progress",
        "mcptape-pool-3-progress",
    ]
    assert (
        b.data.replace(b'"mcptape-pool-2"', b"1").replace(b'"mcptape-pool-2-progress"', b'"t"')
        == _frame(paced_call(1, "B", 1, 0)).data
    )  # nothing else changed, whitespace included
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcptape-pool-1-progress","progress":1}}'
    back = ids.give_back(progress)
    assert back is not None and back[0] == progress.replace(b'"mcptape-pool-1-progress"', b"7")
    assert back[1] == [{"as": "token", "theirs": "7", "ours": '"mcptape-pool-1-progress"'}]
    answer = b'{"jsonrpc":"2.0","id":"mcptape-pool-1","result":{}}'
    back = ids.give_back(answer)
    assert back is not None and back[0] == b'{"jsonrpc":"2.0","id":18446744073709551617,"result":{}}'
    cancel = Frame(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}', "c2s")
    assert ids.cancel(cancel, connection=9) is None  # two requests with id 1: not sure which
    found = ids.cancel(cancel, connection=3)  # the connection that carried one of them
    assert found is not None and found[0] == "s1" and b'"requestId":"mcptape-pool-3"' in found[1].data
    ids.give_back(b'{"jsonrpc":"2.0","id":"mcptape-pool-2","result":{}}')  # B answered
    assert ids.cancel(cancel, connection=2) is None  # B's own late cancellation: not C's request
    only = ids.cancel(cancel, connection=9)
    assert only is not None and b'"mcptape-pool-3"' in only[1].data  # the one request with that id


def test_the_clients_frame_stays_as_sent_and_its_edited_form_goes_upstream_once() -> None:
    ids = PoolIds()
    client = _frame(paced_call(5, "D", 1, 0))
    edited = ids.take(client, "s1", connection=4)
    assert client.data == _frame(paced_call(5, "D", 1, 0)).data  # what is recorded
    assert client.meta is not None and client.meta["pool"] == [
        {"as": "id", "theirs": "5", "ours": '"mcptape-pool-1"'}
    ]
    assert ids.outgoing(client, keep=True) is edited
    assert ids.outgoing(client) is edited and ids.outgoing(client) is client  # handed out once


def test_a_frame_forwarded_in_place_of_a_clients_goes_upstream_with_what_that_one_was_lent() -> None:
    ids = PoolIds()
    client = _frame(paced_call(3, "E", 1, 0))
    ids.take(client, "s1", connection=1)
    # An injector declaring capabilities forwards a frame of its own in the client's place.
    body = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"t"},"x":1}}'
    out = json.loads(ids.outgoing(Frame(body, "c2s", "proxy")).data)
    assert (
        out["id"] == "mcptape-pool-1" and out["params"]["_meta"]["progressToken"] == "mcptape-pool-1-progress"
    )
    assert ids.outgoing(client) is client  # the client's own frame is not sent now
