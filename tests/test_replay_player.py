"""The tape player in-process: a relay between it and an in-memory server the test plays."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcptape.proxy.addonmanager import AddonManager, SessionContext
from mcptape.proxy.links.memory import MemoryLink
from mcptape.proxy.relay import Relay
from mcptape.replay.player import TapePlayer
from mcptape.replay.tape import build_tape, tape_frame


def tape_of(*items: tuple[str, dict[str, Any]]) -> Any:
    frames = [
        tape_frame(i, d, "client" if d == "c2s" else "server", float(i), json.dumps(m).encode())  # type: ignore[arg-type]
        for i, (d, m) in enumerate(items, 1)
    ]
    return build_tape(frames, "t")


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {}}}
SAMPLE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "sampling/createMessage",
    "params": {"messages": [], "maxTokens": 5},
}
ANSWER = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
}
DONE = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def test_player_sends_recorded_bytes_waits_and_answers_server_requests_by_method() -> None:
    tape = tape_of(
        ("c2s", CALL), ("s2c", SAMPLE), ("c2s", ANSWER), ("s2c", DONE), ("c2s", NOTE), ("c2s", LIST)
    )

    async def main() -> list[bytes]:
        player = TapePlayer(tape, timeout=5)
        server = MemoryLink("s2c", "server")
        relay = Relay(player, server, AddonManager([]), SessionContext(None, "replay", "t", "t"), grace=0.1)
        run = asyncio.ensure_future(relay.run())
        got = [await server.peer.next()]
        assert got[0] == tape.frames[0].data  # the exact recorded bytes
        # The live server asks with another id and other params: the recorded answer, re-addressed.
        await server.peer.send(
            json.dumps({**SAMPLE, "id": "live-7", "params": {"messages": [], "maxTokens": 9}})
        )
        got.append(await server.peer.next())
        # Nothing more is sent before the response the client waited for.
        await asyncio.sleep(0.05)
        assert len(server.peer.received) == 2
        await server.peer.send(json.dumps(DONE))
        got.append(await server.peer.next())
        got.append(await server.peer.next())
        await server.peer.send(json.dumps({**DONE, "id": 2, "result": {"tools": []}}))
        outcome = await asyncio.wait_for(run, 5)
        assert outcome.status == "closed"
        return got

    got = [json.loads(g) for g in asyncio.run(main())]
    assert got[1] == {"jsonrpc": "2.0", "id": "live-7", "result": ANSWER["result"]}
    assert got[2] == NOTE and got[3] == LIST


def test_player_reports_a_response_that_never_comes_and_goes_on() -> None:
    tape = tape_of(("c2s", CALL), ("s2c", DONE), ("c2s", LIST), ("s2c", {**DONE, "id": 2}))

    async def main() -> TapePlayer:
        player = TapePlayer(tape, timeout=0.1)
        server = MemoryLink("s2c", "server")
        relay = Relay(player, server, AddonManager([]), SessionContext(None, "replay", "t", "t"), grace=0.1)
        run = asyncio.ensure_future(relay.run())
        await server.peer.next()
        assert json.loads(await server.peer.next(timeout=2)) == LIST  # sent after the first timed out
        await server.peer.send(json.dumps({**DONE, "id": 2}))
        await asyncio.wait_for(run, 5)
        return player

    player = asyncio.run(main())
    assert player.timed_out == ["1"]
    replayed = player.replayed_tape()
    assert replayed.exchanges[0].response is None and replayed.exchanges[1].response is not None


def test_injection_rules_are_asked_first_and_the_recording_answers_the_rest() -> None:
    tape = tape_of(("c2s", CALL), ("s2c", SAMPLE), ("c2s", ANSWER), ("s2c", DONE))
    asked: list[dict[str, Any]] = []

    def rules(request: dict[str, Any]) -> dict[str, Any] | None:
        asked.append(request)
        return {"result": {"action": "decline"}} if request["method"] == "elicitation/create" else None

    async def main() -> list[Any]:
        player = TapePlayer(tape, timeout=5, answer=rules)
        server = MemoryLink("s2c", "server")
        relay = Relay(player, server, AddonManager([]), SessionContext(None, "replay", "t", "t"), grace=0.1)
        run = asyncio.ensure_future(relay.run())
        await server.peer.next()
        await server.peer.send(json.dumps(SAMPLE))  # no rule for it: the identical recorded one answers
        await server.peer.send(
            json.dumps({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {}})
        )
        await server.peer.send(json.dumps({**SAMPLE, "id": 6, "params": {"messages": [], "maxTokens": 1}}))
        got = [json.loads(await server.peer.next()) for _ in range(3)]
        await server.peer.send(json.dumps(DONE))
        await asyncio.wait_for(run, 5)
        return sorted(got, key=lambda m: m["id"])

    first, elicited, loose = asyncio.run(main())
    assert first == {"jsonrpc": "2.0", "id": 0, "result": ANSWER["result"]}
    assert elicited == {"jsonrpc": "2.0", "id": 5, "result": {"action": "decline"}}
    assert loose == {"jsonrpc": "2.0", "id": 6, "result": ANSWER["result"]}  # no rule: the recorded one
    assert [r["method"] for r in asked] == [
        "sampling/createMessage",
        "elicitation/create",
        "sampling/createMessage",
    ]


@pytest.mark.slow
def test_a_pipelined_recording_of_large_frames_replays_against_a_real_process_without_deadlock() -> None:
    # Forty 96 KiB requests, twenty sent before any response and twenty after the first,
    # each answered with twice as much: both pipes fill up, so whoever writes to the server
    # must never be the thread that reads it.
    import sys

    from mcptape.replay.run import ReplayPlan, replay_tape
    from tests.helpers.paths import ROOT
    from tests.servers.fast_mcp import answer

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    calls = [
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"t": "x" * (96 << 10)}},
        }
        for i in range(1, 41)
    ]
    items: list[tuple[str, dict[str, Any]]] = [("c2s", init), ("s2c", answer(init) or {})]
    items += [("c2s", c) for c in calls[:20]] + [("s2c", answer(calls[0]) or {})]
    items += [("c2s", c) for c in calls[20:]] + [("s2c", answer(c) or {}) for c in calls[1:]]
    tape = tape_of(*items)
    assert [len(step.wait_for) for step in tape.steps[1:]] == ([1] + [0] * 19) * 2  # pipelined
    server = [sys.executable, str(ROOT / "tests" / "servers" / "fast_mcp.py")]
    plan = ReplayPlan(server, None, None, "fast", None, record=False, timeout=30, grace=1, progress=False)

    async def main() -> Any:
        return await asyncio.wait_for(replay_tape(tape, plan), 45)

    replayed = asyncio.run(main())
    assert replayed.result.error is None
    assert [e.status for e in replayed.result.exchanges] == ["match"] * 41


@pytest.mark.slow
def test_a_server_flooding_notifications_is_counted_past_a_bound_not_kept_and_the_replay_fails() -> None:
    # The hostile server never answers and writes notifications as fast as it can: kept
    # all, they filled memory (940 MB in 10 s); past the bound they are only counted.
    import sys

    from mcptape.replay.player import KEEP_NOTIFICATIONS
    from mcptape.replay.run import ReplayPlan, replay_tape
    from tests.helpers.paths import ROOT

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    tape = tape_of(("c2s", init), ("s2c", {"jsonrpc": "2.0", "id": 0, "result": {}}))
    server = [sys.executable, "-m", "tests.servers.hostile", "flood-stdout"]
    plan = ReplayPlan(
        server, None, str(ROOT), "flood", None, record=False, timeout=2, grace=0.5, progress=False
    )

    async def main() -> Any:
        return await asyncio.wait_for(replay_tape(tape, plan), 30)

    replayed = asyncio.run(main())
    kept = [f for f in replayed.frames if f.kind == "notification"]
    assert len(kept) == KEEP_NOTIFICATIONS
    flood = replayed.result.exchanges[-1]
    assert (flood.method, flood.status) == ("notifications", "differs")
    assert flood.differences[0].recorded == 0
    sent = int(str(flood.differences[0].replayed).split()[0])
    assert sent > KEEP_NOTIFICATIONS
    assert replayed.result.exchanges[0].status == "no response"  # initialize never answered
