"""Loose server messages (sent while no client request was in flight) and what they followed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptape.replay.loose import Anchors, anchored
from mcptape.replay.tape import ServerCall, build_tape, tape_frame
from tests.helpers.interop import ts_steps
from tests.helpers.paths import MCPTAPE, everything_server_cmd


def tape_of(*frames: tuple[str, dict[str, Any]]) -> Any:
    built = [
        tape_frame(
            seq, direction, "client" if direction == "c2s" else "server", float(seq), json.dumps(m).encode()
        )
        for seq, (direction, m) in enumerate(frames, 1)
    ]
    return build_tape(built, "test")


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
INIT_OK = {"jsonrpc": "2.0", "id": 1, "result": {}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
ROOTS = {"jsonrpc": "2.0", "id": 0, "method": "roots/list"}
ROOTS_OK = {"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}


def call(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


def test_loose_messages_are_anchored_to_the_client_message_before_them() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "in flight"}}
    tape = tape_of(
        ("s2c", {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "before anyone"}}),
        ("c2s", INIT), ("s2c", INIT_OK), ("c2s", INITIALIZED), ("s2c", CHANGED), ("s2c", ROOTS),
        ("c2s", ROOTS_OK), ("c2s", call(2)), ("s2c", progress), ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {}}),
        ("c2s", call(3)), ("s2c", {"jsonrpc": "2.0", "id": 3, "result": {}}), ("s2c", CHANGED),
    )  # fmt: skip
    items = anchored(tape)
    assert list(items) == [("notifications/initialized", 1), ("tools/call", 2)]
    first = items[("notifications/initialized", 1)]
    assert first[0] == ("notification", CHANGED, 5.0)  # with when it was recorded (frame 5)
    assert first[1][0] == "call" and isinstance(first[1][1], ServerCall) and first[1][1].request == ROOTS
    assert items[("tools/call", 2)] == [
        ("notification", CHANGED, 13.0)
    ]  # the in-flight message is the exchange's


def test_the_live_client_messages_are_counted_by_method() -> None:
    anchors = Anchors(anchored(tape_of(("c2s", call(1)), ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {}}),
                                       ("c2s", call(2)), ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {}}),
                                       ("s2c", CHANGED))))  # fmt: skip
    assert anchors.after([call(7)]) == []
    assert anchors.after([INITIALIZED, ROOTS_OK]) == []  # other methods and responses do not count
    assert anchors.after([call(8)]) == [("notification", CHANGED, 5.0)]
    assert anchors.after([call(9)]) == []
    assert Anchors({}).after([call(1)]) == []


@pytest.mark.slow
def test_serve_sends_what_the_server_sent_between_requests(tmp_path: Path) -> None:
    """server-everything's list_changed after initialized and its roots/list a moment later."""
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    steps = [{"m": "listTools"}, {"m": "ping", "sleepMs": 1500}, {"m": "ping"}]
    db = tmp_path / "rec.db"
    live = ts_steps(steps, "stdio", *MCPTAPE, "record", "--db", str(db), "--name", "ev", "--", *server)
    assert "notifications/tools/list_changed" in live["notifications"] and live["asked"] == ["roots/list"]
    served = ts_steps(steps, "stdio", *MCPTAPE, "serve", "ev", "--db", str(db))
    assert sorted(served["notifications"]) == sorted(live["notifications"])
    assert served["asked"] == live["asked"]
    assert served["results"] == live["results"]
