"""A whole `record` session in process: the one assembly, a memory client, the demo server on the loop, SQLite.

What `mcptape record` builds (:func:`mcptape.assemble.assemble` with an :class:`OwnStore`)
between a client-facing memory link the test drives frame by frame and the demo server
run by the mcp SDK on the same loop (:class:`tests.helpers.inprocess.SdkServerLink`).
The relay must forward every frame byte for byte, whatever its spelling; the recorder
must write each as it was; the views must correlate the session. The same scenarios
through a real `mcptape record` process are in test_record.py and test_parity.py (slow).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptape.proxy.links.memory import MemoryPeer
from tests.helpers.db import query
from tests.helpers.memory_client import answer, handshake, record_in_process

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def test_a_session_is_relayed_and_recorded_whole_and_the_views_correlate_it(db_path: Path) -> None:
    async def scenario(peer: MemoryPeer) -> list[dict[str, Any]]:
        answers = [await handshake(peer)]
        answers.append(await answer(peer, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'))
        call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}'
        answers.append(await answer(peer, call))
        answers.append(
            await answer(peer, b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail"}}')
        )
        return answers

    outcome, (hello, tools, added, failed) = record_in_process(db_path, scenario)
    assert outcome.status == "closed" and outcome.ended_by == "client"
    assert hello["result"]["serverInfo"]["name"] == "mcptape-demo"
    assert "add" in {t["name"] for t in tools["result"]["tools"]}
    assert added["result"]["structuredContent"] == {"result": 42}
    assert failed["result"]["isError"] is True
    assert query(db_path, "select mode, name, status, client_name, server_name from sessions") == [
        ("record", "mem", "closed", "memory-client", "mcptape-demo")
    ]
    assert query(db_path, "select tool, is_error from tool_calls order by tool") == [("add", 0), ("fail", 1)]
    assert query(db_path, "select count(*) from exchanges where response is null") == [(0,)]


@pytest.mark.parametrize(
    "spelling",
    [
        b'{ "id" : 7 , "jsonrpc" : "2.0" , "method" : "ping" }',
        b'{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":"\\u00e9","method":"ping"}',
        '{"jsonrpc":"2.0","id":"é ✓","method":"ping"}'.encode(),
    ],
)
def test_a_request_reaches_the_server_and_is_recorded_byte_for_byte(db_path: Path, spelling: bytes) -> None:
    async def scenario(peer: MemoryPeer) -> dict[str, Any]:
        await handshake(peer)
        return await answer(peer, spelling)

    _, reply = record_in_process(db_path, scenario)
    assert reply["id"] == json.loads(spelling)["id"] and reply["result"] == {}
    [(text, raw)] = query(db_path, "select text, raw from frames where method = 'ping' and direction = 'c2s'")
    assert (raw if raw is not None else text.encode()) == spelling


def test_a_line_that_is_no_json_is_forwarded_recorded_as_malformed_and_the_session_goes_on(
    db_path: Path,
) -> None:
    async def scenario(peer: MemoryPeer) -> dict[str, Any]:
        await handshake(peer)
        await peer.send(b"{not json")
        return await answer(peer, b'{"jsonrpc":"2.0","id":9,"method":"ping"}')

    _, reply = record_in_process(db_path, scenario)
    assert reply == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert ("malformed", "{not json") in query(
        db_path, "select kind, text from frames where direction = 'c2s'"
    )


def test_progress_and_log_notifications_reach_the_client_and_are_recorded_in_order(db_path: Path) -> None:
    async def scenario(peer: MemoryPeer) -> list[dict[str, Any]]:
        await handshake(peer)
        await peer.send(
            b'{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}'
        )
        await peer.next(10)
        await peer.send(
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"countdown","arguments":'
            b'{"start":2},"_meta":{"progressToken":"t"}}}'
        )
        seen = []
        while True:
            message = json.loads(await peer.next(10))
            seen.append(message)
            if message.get("id") == 5:
                return seen

    _, seen = record_in_process(db_path, scenario)
    methods = [m.get("method", "answer") for m in seen]
    assert methods.count("notifications/progress") == 2 and methods[-1] == "answer"
    recorded = [
        m for (m,) in query(db_path, "select method from frames where direction = 's2c' order by seq")
    ]
    assert [m for m in recorded if m in ("notifications/progress", "notifications/message")] == [
        m for m in methods if m in ("notifications/progress", "notifications/message")
    ]


def test_a_request_left_unanswered_when_the_client_leaves_is_recorded_as_such(db_path: Path) -> None:
    async def scenario(peer: MemoryPeer) -> None:
        await handshake(peer)
        await peer.send(b'{"jsonrpc":"2.0","id":"gone","method":"tools/call","params":{"name":"nope-never"}}')

    outcome, _ = record_in_process(db_path, scenario)
    assert outcome.ended_by == "client"
    rows = query(db_path, "select rpc_id from exchanges where method = 'tools/call'")
    assert rows == [('"gone"',)]
