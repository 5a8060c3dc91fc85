"""The faults addon in the one assembly over in-memory links: what each side gets, what is recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mcptape.proxy.addonmanager import SessionContext
from mcptape.proxy.addons import faults as faults_addon
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.links.memory import MemoryPeer
from tests.helpers.faults import call, nothing_more, notification, request, result, run_faulted


def msg(data: bytes) -> Any:
    return json.loads(data)


def test_a_dropped_response_never_reaches_the_client_and_is_recorded_with_its_fault(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        assert msg(await server.next())["id"] == 1
        await server.send(result(1, {"content": []}))
        assert await nothing_more(client)
        await client.send(call(2, "add"))  # the session goes on; another tool is not touched
        await server.next()
        await server.send(result(2, {"content": []}))
        assert msg(await client.next())["id"] == 2

    run = run_faulted(tmp_path / "t.db", ["tools/call:echo=drop,seed=3"], scenario)
    dropped = [f for f in run.frames if f["meta"].get("fault")]
    assert [(f["direction"], f["kind"], f["meta"]["forwarded"]) for f in dropped] == [
        ("s2c", "response", False)
    ]
    assert dropped[0]["meta"]["fault"]["action"] == "drop"
    # The event sits beside the frame: it names its seq, and the rules are recorded with their seed.
    assert [(e["seq"], e["action"]) for e in run.faults()] == [(dropped[0]["seq"], "drop")]
    rules = [e for e in run.events if e["kind"] == "faults"]
    assert rules[0]["data"]["rules"][0]["seed"] == 3


def test_the_second_call_is_not_dropped_when_the_rule_names_another_tool(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "add"))
        await server.next()
        await server.send(result(1, {"content": []}))
        assert msg(await client.next())["id"] == 1

    run = run_faulted(tmp_path / "t.db", ["tools/call:echo=drop"], scenario)
    assert run.faults() == []


def test_an_error_fault_answers_the_request_with_its_exact_id_and_the_server_never_sees_it(
    tmp_path: Path,
) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(b'{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"echo"}}')
        assert await client.next() == (
            b'{"jsonrpc":"2.0","id":1.0,"error":{"code":-32603,"message":"mcptape fault injection: '
            b'error -32603 answered in the server\'s place","data":{"fault":"tools/call=error:-32603"}}}'
        )
        assert server.received == []

    run = run_faulted(tmp_path / "t.db", ["tools/call=error:-32603"], scenario)
    answer = run.frames[-1]
    assert (answer["origin"], answer["kind"], answer["meta"]["fault"]["action"]) == (
        "proxy",
        "error",
        "error:-32603",
    )


def test_timeout_holds_the_request_and_nobody_ever_answers_it(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        assert await nothing_more(client)
        assert server.received == []
        await client.send(notification("notifications/cancelled", {"requestId": 1}))
        assert msg(await server.next())["method"] == "notifications/cancelled"

    run = run_faulted(tmp_path / "t.db", ["tools/call=timeout"], scenario)
    held = run.frames[0]
    assert (held["kind"], held["meta"]["forwarded"], held["meta"]["fault"]["action"]) == (
        "request",
        False,
        "timeout",
    )
    # At the end nobody answers it either: the relay never forwarded it, so it owes nothing.
    assert [f for f in run.frames if f["direction"] == "s2c"] == []


def test_a_delayed_response_is_overtaken_by_what_the_server_sends_after_it(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        await server.next()
        await server.send(result(1, {"content": [{"type": "text", "text": "late"}]}))
        await server.send(notification("notifications/message", {"level": "info", "data": "after"}))
        assert msg(await client.next())["method"] == "notifications/message"
        assert msg(await client.next(5))["id"] == 1

    run = run_faulted(tmp_path / "t.db", ["tools/call=delay:300"], scenario)
    original, copy = [f for f in run.frames if f["kind"] == "response"]
    assert original["meta"]["forwarded"] is False and original["origin"] == "server"
    assert (copy["origin"], copy["text"]) == ("proxy", original["text"])
    assert copy["meta"]["fault"]["of"] == original["seq"]


def test_a_delayed_request_is_still_answered_by_the_relay_when_the_server_dies(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(7, "echo"))
        assert msg(await server.next(5))["id"] == 7  # sent late, by mcptape
        server.close()
        error = msg(await client.next())
        assert error["id"] == 7 and error["error"]["code"] == -32000

    run_faulted(tmp_path / "t.db", ["tools/call=delay:50,on=request"], scenario, end="none")


def test_duplicate_sends_the_frame_twice(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        await server.next()
        await server.send(result(1, {"content": []}))
        first, second = await client.next(), await client.next()
        assert first == second == result(1, {"content": []})

    run = run_faulted(tmp_path / "t.db", ["tools/call=duplicate"], scenario)
    responses = [
        (f["origin"], f["meta"].get("forwarded", True)) for f in run.frames if f["kind"] == "response"
    ]
    assert responses == [("server", True), ("proxy", True)]


def test_malformed_replaces_the_response_with_a_cut_frame_on_one_line(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        await server.next()
        sent = result(1, {"content": [{"type": "text", "text": "x" * 40}]})
        await server.send(sent)
        got = await client.next()
        assert sent.startswith(got) and got != sent and b"\n" not in got
        with pytest.raises(ValueError):
            json.loads(got)

    run = run_faulted(tmp_path / "t.db", ["tools/call=malformed"], scenario)
    original, replacement = run.frames[-2:]
    assert original["meta"]["forwarded"] is False
    assert (replacement["origin"], replacement["kind"], replacement["meta"]["replaces"]) == (
        "proxy",
        "malformed",
        original["seq"],
    )


def test_reorder_sends_a_progress_notification_after_the_result_it_reports_on(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(request(1, "tools/call", {"name": "countdown", "_meta": {"progressToken": 5}}))
        await server.next()
        await server.send(notification("notifications/progress", {"progressToken": 5, "progress": 1}))
        await server.send(result(1, {"content": []}))
        assert msg(await client.next())["id"] == 1
        assert msg(await client.next())["method"] == "notifications/progress"

    run = run_faulted(tmp_path / "t.db", ["notifications/progress=reorder"], scenario)
    assert [(e["role"], e["kind"]) for e in run.faults()] == [
        ("reorder", "notification"),
        ("overtakes", "response"),
    ]
    sent = [f["kind"] for f in run.frames if f["origin"] == "proxy"]
    assert sent == ["response", "notification"]


def test_a_reordered_frame_nothing_follows_goes_alone_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faults_addon, "REORDER_WAIT_S", 0.05)

    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await server.send(notification("notifications/tools/list_changed"))
        assert msg(await client.next())["method"] == "notifications/tools/list_changed"

    run_faulted(tmp_path / "t.db", ["notifications/*=reorder"], scenario)


def test_cut_on_stdio_like_links_closes_the_clients_input_and_ends_the_session(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await client.send(call(1, "echo"))
        await server.next()
        await server.send(result(1, {"content": []}))
        assert await nothing_more(client)
        assert client.link._send_closed

    run = run_faulted(tmp_path / "t.db", ["tools/call=cut"], scenario, end="none")
    assert run.outcome.status == "closed"
    assert [e["action"] for e in run.faults()] == ["cut"]


def test_a_server_request_can_be_answered_with_an_error_in_the_clients_place(tmp_path: Path) -> None:
    async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
        await server.send(request("s1", "sampling/createMessage", {"messages": []}))
        answer = msg(await server.next())
        assert answer["id"] == "s1" and "client's place" in answer["error"]["message"]
        assert client.received == []

    run_faulted(tmp_path / "t.db", ["sampling/createMessage=error:-1"], scenario)


def test_a_probability_with_a_seed_touches_the_same_frames_in_two_runs(tmp_path: Path) -> None:
    def once(db: Path) -> list[int]:
        async def scenario(client: MemoryPeer, server: MemoryPeer) -> None:
            for n in range(1, 41):
                await client.send(call(n, "echo"))
                await server.next()
                await server.send(result(n, {}))
            await client.send(call(99, "echo"))  # a last one, let through, marks the end
            await server.next()

        run = run_faulted(db, ["tools/call=drop,p=0.5,seed=11"], scenario)
        return [json.loads(f["text"])["id"] for f in run.frames if f["meta"].get("fault")]

    first, second = once(tmp_path / "a.db"), once(tmp_path / "b.db")
    assert first == second
    assert 5 < len(first) < 35  # about half: the draw is not all or nothing


def test_an_event_held_while_the_store_opens_keeps_the_time_it_happened() -> None:
    class Writer:
        def __init__(self) -> None:
            self.events: list[tuple[Any, ...]] = []

        def add_event(self, *args: Any) -> None:
            self.events.append(args)

    recorder = Recorder()
    before = time.time()
    recorder.event(SessionContext(None, "record", "mem", "mem"), "fault", "dropped", {"seq": 3})
    time.sleep(0.05)
    attached = time.time()
    writer = Writer()
    recorder.attach(writer, "s1")  # type: ignore[arg-type]
    ((session, kind, _text, data, ts),) = writer.events
    assert (session, kind, data) == ("s1", "fault", {"seq": 3})
    assert before <= ts < attached
