"""The relay, addons, flows and recorder in-process, over in-memory links (no subprocess)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptape.proxy.addonmanager import AddonError, AddonManager, Flow, Outcome, SessionContext
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.links.memory import MemoryLink, memory_pair
from mcptape.proxy.relay import Relay
from mcptape.wire.frame import Frame
from tests.helpers.db import query


def _session() -> SessionContext:
    return SessionContext(None, "test", "memory->memory", "memory")


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 20))


async def _started(
    addons: list[object], exit_code: int | None = 0
) -> tuple[Relay, MemoryLink, MemoryLink, Any]:
    client, server = memory_pair(exit_code=exit_code)
    relay = Relay(client, server, AddonManager(addons), _session(), grace=0.2)
    task = asyncio.ensure_future(relay.run())
    await asyncio.sleep(0)  # let run() start the links
    await asyncio.sleep(0)
    return relay, client, server, task


def test_frames_cross_both_ways_byte_for_byte_and_in_order() -> None:
    async def scenario() -> Outcome:
        _, client, server, task = await _started([])
        odd = [b'{"jsonrpc":"2.0",  "id":1,"method":"a"}', b"not json", b'[{"jsonrpc":"2.0","method":"n"}]']
        for data in odd:
            await client.peer.send(data)
        assert [await server.peer.next() for _ in odd] == odd
        await server.peer.send(b'{"id":1,"jsonrpc":"2.0","result":{}}')
        assert await client.peer.next() == b'{"id":1,"jsonrpc":"2.0","result":{}}'
        client.peer.close()
        return await task

    outcome = run(scenario)
    assert (outcome.status, outcome.ended_by, outcome.exit_code) == ("closed", "client", 0)


def test_an_async_hook_on_frames_delivered_from_the_loop_does_not_deadlock() -> None:
    seen: list[bytes] = []

    class Slow:
        async def frame(self, flow: Flow) -> None:
            await asyncio.sleep(0.01)
            seen.append(flow.frame.data)

    async def scenario() -> None:
        _, client, server, task = await _started([Slow()])
        await client.peer.send(b'{"jsonrpc":"2.0","id":1,"method":"a"}')
        await client.peer.send(b'{"jsonrpc":"2.0","id":2,"method":"b"}')
        assert await server.peer.next() == b'{"jsonrpc":"2.0","id":1,"method":"a"}'
        assert await server.peer.next() == b'{"jsonrpc":"2.0","id":2,"method":"b"}'
        client.peer.close()
        await task

    run(scenario)
    assert len(seen) == 2


def test_back_pressure_holds_the_next_frame_until_the_awaitable_is_done() -> None:
    gate: list[asyncio.Future[None]] = []

    class Pressure:
        def frame_done(self, flow: Flow) -> Awaitable[None] | None:
            if flow.frame.method == "first":
                gate.append(asyncio.get_running_loop().create_future())
                return gate[0]
            return None

    async def scenario() -> None:
        _, client, server, task = await _started([Pressure()])
        sending = asyncio.ensure_future(client.peer.send(b'{"jsonrpc":"2.0","method":"first"}'))
        await asyncio.sleep(0.05)
        assert server.peer.received == [] and not sending.done()
        gate[0].set_result(None)
        await sending
        assert server.peer.received == [b'{"jsonrpc":"2.0","method":"first"}']
        client.peer.close()
        await task

    run(scenario)


def test_back_pressure_from_a_reader_thread_blocks_the_thread_not_the_loop() -> None:
    class Pressure:
        def frame_done(self, flow: Flow) -> Awaitable[None]:
            return asyncio.sleep(0.05)

    async def scenario() -> None:
        relay, client, server, task = await _started([Pressure()])
        loop_turns = 0
        done = threading.Event()

        def reader() -> None:  # what a pipe link's reader thread does
            from mcptape.proxy.link import wait_from_thread

            # The relay blocks this thread itself while the addon's awaitable runs on the
            # loop, then forwards the frame from here.
            pending = relay.deliver(Frame(b'{"jsonrpc":"2.0","method":"x"}', "c2s"))
            if pending is not None:
                wait_from_thread(loop, pending)
            done.set()

        loop = asyncio.get_running_loop()
        threading.Thread(target=reader).start()
        while not done.is_set():
            loop_turns += 1
            await asyncio.sleep(0.001)
        assert loop_turns > 5  # the loop kept running while the thread waited
        assert server.peer.received == [b'{"jsonrpc":"2.0","method":"x"}']
        client.peer.close()
        await task

    run(scenario)


def test_respond_answers_with_the_exact_id_and_does_not_forward() -> None:
    class Answer:
        def frame(self, flow: Flow) -> None:
            if flow.frame.method == "roots/list":
                flow.respond({"roots": []})

    async def scenario() -> None:
        _, client, server, task = await _started([Answer()])
        await server.peer.send(b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"roots/list"}')
        assert (
            await server.peer.next() == b'{"jsonrpc":"2.0","id":18446744073709551617,"result":{"roots":[]}}'
        )
        assert client.peer.received == []
        client.peer.close()
        await task

    run(scenario)


def test_one_batch_element_is_answered_and_the_rest_forwarded() -> None:
    class Answer:
        def frame(self, flow: Flow) -> None:
            if flow.frame.kind == "batch":
                flow.respond_error(-32601, "no", item=0)

    async def scenario() -> None:
        _, client, server, task = await _started([Answer()])
        await client.peer.send(
            b'[{"jsonrpc":"2.0","id":"a","method":"x"},{"jsonrpc":"2.0","id":"b","method":"y"}]'
        )
        assert orjson.loads(await server.peer.next()) == [{"jsonrpc": "2.0", "id": "b", "method": "y"}]
        answer = orjson.loads(await client.peer.next())
        assert answer == [{"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}}]
        client.peer.close()
        await task

    run(scenario)


def test_relay_request_uses_its_own_ids_and_keeps_the_reply_from_the_client() -> None:
    async def scenario() -> None:
        relay, client, server, task = await _started([])
        asking = asyncio.ensure_future(relay.request("c2s", "tools/list", {}, timeout=5))
        sent = orjson.loads(await server.peer.next())
        assert sent["id"] == "mcptape-1" and sent["method"] == "tools/list"
        await server.peer.send(b'{"jsonrpc":"2.0","id":"mcptape-1","result":{"tools":[]}}')
        reply = await asking
        assert reply.message["result"] == {"tools": []}
        assert client.peer.received == []
        client.peer.close()
        await task

    run(scenario)


def test_pending_requests_get_errors_a_client_can_match_when_the_server_ends() -> None:
    async def scenario() -> list[Any]:
        _, client, server, task = await _started([], exit_code=3)
        await client.peer.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}')
        await client.peer.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}')
        await client.peer.send(
            b'[{"jsonrpc":"2.0","id":"a","method":"a"},{"jsonrpc":"2.0","id":"b","method":"b"}]'
        )
        await client.peer.send(b'{"jsonrpc":"2.0","id":1.0,"method":"c"}')
        await server.peer.send(b'{"jsonrpc":"2.0","id":1,"result":{}}')  # answers the id-1.0 request
        server.peer.close()
        outcome = await task
        assert (outcome.status, outcome.exit_code) == ("error", 3)
        return [orjson.loads(data) for data in client.peer.received[1:]]

    answers = run(scenario)
    singles = [a for a in answers if isinstance(a, dict)]
    batches = [a for a in answers if isinstance(a, list)]
    assert [a["id"] for a in singles] == [7, 7]
    assert "exited with status 3 before answering tools/call" in singles[0]["error"]["message"]
    assert len(batches) == 1
    assert sorted(a["id"] for a in batches[0]) == ["a", "b"]


@pytest.mark.parametrize("id_text", ["1.50", "1E2", "-0", "12345678901234567890123", '"x\\u00e9"'])
def test_the_error_for_an_unanswered_request_carries_the_id_text_the_client_wrote(id_text: str) -> None:
    async def scenario() -> bytes:
        _, client, server, task = await _started([], exit_code=1)
        await client.peer.send(b'{"jsonrpc":"2.0","id":' + id_text.encode() + b',"method":"tools/call"}')
        await server.peer.next()
        server.peer.close()
        await task
        return client.peer.received[-1]

    answer = run(scenario)
    assert answer.startswith(b'{"jsonrpc":"2.0","id":' + id_text.encode() + b',"error":')
    assert orjson.loads(answer)["error"]["code"] == -32000


def test_an_addon_with_a_misspelled_hook_is_refused() -> None:
    class Typo:
        def frame_don(self, flow: Flow) -> None: ...

    with pytest.raises(AddonError, match="frame_done"):
        AddonManager([Typo()])


def test_a_crashing_addon_does_not_stop_the_relay(capsys: pytest.CaptureFixture[str]) -> None:
    class Broken:
        def frame(self, flow: Flow) -> None:
            raise RuntimeError("boom")

    async def scenario() -> None:
        _, client, server, task = await _started([Broken()])
        for _ in range(3):
            await client.peer.send(b'{"jsonrpc":"2.0","method":"n"}')
        assert len(server.peer.received) == 3
        client.peer.close()
        await task

    run(scenario)
    assert capsys.readouterr().err.count("addon Broken.frame failed: RuntimeError: boom") == 1


def test_stop_interrupts_and_closes_the_server() -> None:
    async def scenario() -> Outcome:
        relay, _, server, task = await _started([])
        relay.stop("SIGTERM")
        outcome = await task
        assert server.peer.closed_by_relay
        return outcome

    assert run(scenario).status == "interrupted"


def test_recorder_holds_frames_until_the_store_is_attached_then_writes_them_in_order(tmp_path: Path) -> None:
    from mcptape.store import open_store

    recorder = Recorder()
    db = tmp_path / "rec.db"

    async def scenario() -> None:
        _, client, server, task = await _started([recorder])
        await client.peer.send(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"c"}}}'
        )
        await server.peer.send(b'{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"s"}}}')
        store = open_store(str(db))
        sid = store.create_session(mode="test")
        writer = store.writer()
        recorder.attach(writer, sid)
        await client.peer.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        client.peer.close()
        await task
        writer.close()
        store.close()

    run(scenario)
    rows = query(db, "select seq, direction, kind from frames order by seq")
    assert rows == [(1, "c2s", "request"), (2, "s2c", "response"), (3, "c2s", "notification")]
    assert query(db, "select client_name, server_name, status from sessions") == [("c", "s", "closed")]
