"""The `conversations` view: 2026-07-28 exchanges stitched by requestState chains, task ids, traces, clients.

A retry that echoes an ``input_required`` round's ``requestState``, and a ``tasks/get``
naming a task id a call's answer minted, belong to the conversation of the exchange
they continue, in another session and on another replica too; that chain's first
exchange gives the conversation its id (its trace, else its client).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcptape.store import open_store
from mcptape.wire.frame import Frame
from tests.helpers.postgres import private_server

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def msg(**fields: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


def test_chains_tasks_traces_and_clients_make_conversations_across_sessions(tmp_path: Path) -> None:
    check(str(tmp_path / "c.db"))


@pytest.mark.slow
def test_the_same_conversations_on_postgresql() -> None:
    with private_server() as server:
        check(server.url(server.create_database()))


def check(db: str) -> None:
    with open_store(db) as store:
        writer = store.writer()
        a = writer.create_session(mode="proxy", replica="a", protocol_version="2026-07-28")
        b = writer.create_session(mode="proxy", replica="b", protocol_version="2026-07-28")
        old = writer.create_session(mode="proxy", replica="a", protocol_version="2025-11-25")
        traced = {**META, "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
        client = {**META, "io.modelcontextprotocol/clientInfo": {"name": "cli", "version": "2"}}
        frames = [
            (a, Frame(msg(id=1, method="tools/call", params={"name": "x", "_meta": traced}), "c2s")),
            (a, Frame(msg(id=1, result={"resultType": "input_required", "requestState": "S1"}), "s2c")),
            (
                b,
                Frame(
                    msg(id=2, method="tools/call", params={"name": "x", "requestState": "S1", "_meta": META}),
                    "c2s",
                ),
            ),
            (b, Frame(msg(id=2, result={"task": {"taskId": "K1", "status": "working"}}), "s2c")),
            (a, Frame(msg(id=3, method="tasks/get", params={"taskId": "K1", "_meta": META}), "c2s")),
            (a, Frame(msg(id=3, result={"taskId": "K1", "status": "completed"}), "s2c")),
            (b, Frame(msg(id=4, method="tools/call", params={"name": "y", "_meta": client}), "c2s")),
            (b, Frame(msg(id=4, result={"content": []}), "s2c")),
            (old, Frame(msg(id=1, method="tools/call", params={"name": "z", "_meta": traced}), "c2s")),
            (old, Frame(msg(id=1, result={"content": []}), "s2c")),
        ]
        seqs: dict[str, int] = {}
        for n, (session, frame) in enumerate(frames):
            frame.ts = 1000.0 + n
            seqs[session] = seqs.get(session, 0) + 1
            writer.add_frame(session, seqs[session], frame)
        writer.close()
        with store.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "select rpc_id, replica, conversation_id, trace_id, client from conversations order by requested_at"
            ).all()
    assert [tuple(r) for r in rows] == [
        ("1", "a", f"trace-{TRACE}", TRACE, None),
        ("2", "b", f"trace-{TRACE}", None, None),  # echoes S1: continues exchange 1
        ("3", "a", f"trace-{TRACE}", None, None),  # names task K1 that exchange 2 minted
        ("4", "b", f"client-{b}-cli/2", None, "cli/2"),
        ("1", "a", old, TRACE, None),  # a session with protocol sessions is one conversation
    ]
