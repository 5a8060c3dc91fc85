"""Test helper: a recording database holding conversations that span sessions and replicas.

- ``shared``: one 2025-11-25 client session passed through by two gateway replicas
  (``a`` and ``b``): two session rows sharing ``conversation_id`` :data:`SHARED`, their
  frames interleaved in time, both using request id 2 (ids repeat across sessions), and
  a stderr line on each;
- ``trace``: 2026-07-28 traffic in two pool sessions on replicas ``a`` and ``b``: a
  ``tools/call`` carrying a ``traceparent`` answered ``input_required``, its retry on
  the other replica (echoing ``requestState``), answered with a task, and a
  ``tasks/get`` polling that task back on the first one: conversation
  ``trace-`` + :data:`TRACE`. The same pool sessions carry exchanges of other
  conversations (a client of its own, ``client-<pool_b>-cli/2``), a progress
  notification and stderr before and after the trace ran, which the trace leaves out;
- ``plain``: a session of its own, named ``plain``.

    from tests.helpers.conversations import build_conversations

tests/conftest.py has them as fixtures: ``conversations`` and ``conversations_store``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from mcptape.store import open_store
from mcptape.wire.frame import Frame

T0: Final = 1_800_000_000.0
SHARED: Final = "c0ffee00c0ffee00c0ffee00c0ffee00"
TRACE: Final = "4bf92f3577b34da6a3ce929d0e0e4736"
MODERN: Final = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
TRACED: Final = {**MODERN, "traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
CLIENT: Final = {**MODERN, "io.modelcontextprotocol/clientInfo": {"name": "cli", "version": "2"}}


@dataclass
class Conversations:
    shared_a: str
    shared_b: str
    pool_a: str
    pool_b: str
    plain: str

    @property
    def trace(self) -> str:
        return f"trace-{TRACE}"

    @property
    def client(self) -> str:
        return f"client-{self.pool_b}-cli/2"


def _rpc(**fields: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **fields})


def build_conversations(db: Path | str) -> Conversations:
    """Write the sessions of the module docstring into ``db`` (a path or a URL) and return their ids."""
    store = open_store(str(db))
    writer = store.writer()
    c, s = "c2s", "s2c"
    shared = {"mode": "proxy", "protocol_version": "2025-11-25", "conversation_id": SHARED, "name": "files"}
    a = writer.create_session(replica="a", started_at=T0, **shared)
    b = writer.create_session(replica="b", started_at=T0 + 0.05, **shared)
    pool = {"mode": "proxy", "protocol_version": "2026-07-28", "name": "pool"}
    pa = writer.create_session(replica="a", started_at=T0 + 1, **pool)
    pb = writer.create_session(replica="b", started_at=T0 + 1.05, **pool)
    plain = writer.create_session(mode="record", name="plain", started_at=T0 + 3)
    seqs: dict[str, int] = {}

    def send(session: str, at: float, direction: str, body: bytes) -> None:
        seqs[session] = seqs.get(session, 0) + 1
        writer.add_frame(session, seqs[session], Frame(body, direction, None, T0 + at))  # type: ignore[arg-type]

    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "inspector", "version": "1"},
    }
    send(a, 0.01, c, _rpc(id=1, method="initialize", params=hello))
    send(a, 0.02, s, _rpc(id=1, result={"protocolVersion": "2025-11-25", "capabilities": {},
                                        "serverInfo": {"name": "fs", "version": "3"}}))  # fmt: skip
    send(
        b, 0.10, c, _rpc(id=3, method="tools/call", params={"name": "read_file", "arguments": {"path": "/x"}})
    )
    send(b, 0.15, s, _rpc(id=3, result={"content": [{"type": "text", "text": "x"}]}))
    send(a, 0.20, c, _rpc(id=2, method="tools/call", params={"name": "list", "arguments": {}}))
    writer.add_event(a, "stderr", "replica a: listing", ts=T0 + 0.21)
    send(a, 0.25, s, _rpc(id=2, result={"content": []}))
    send(b, 0.30, c, _rpc(id=2, method="tools/call", params={"name": "write_file", "arguments": {}}))
    writer.add_event(b, "stderr", "replica b: refused", ts=T0 + 0.31)
    send(b, 0.35, s, _rpc(id=2, error={"code": -32602, "message": "path is required"}))

    writer.add_event(pa, "stderr", "pool a: before the trace", ts=T0 + 1.01)
    send(pa, 1.10, c, _rpc(id=1, method="tools/call", params={"name": "book", "_meta": TRACED}))
    send(pa, 1.12, s, _rpc(id=1, result={"resultType": "input_required", "requestState": "S1",
                                         "inputRequests": {"date": {"method": "elicitation/create"}}}))  # fmt: skip
    send(pb, 1.20, c, _rpc(id=4, method="tools/call", params={"name": "other", "_meta": CLIENT}))
    send(pb, 1.21, s, _rpc(id=4, result={"content": []}))
    send(pa, 1.22, s, _rpc(method="notifications/progress", params={"progressToken": 9, "progress": 1}))
    send(pb, 1.30, c, _rpc(id=2, method="tools/call", params={"name": "book", "requestState": "S1",
                                                              "inputResponses": {"date": {}}, "_meta": MODERN}))  # fmt: skip
    writer.add_event(pb, "stderr", "pool b: booking", ts=T0 + 1.31)
    send(
        pb,
        1.32,
        s,
        _rpc(id=2, result={"resultType": "complete", "task": {"taskId": "K1", "status": "working"}}),
    )
    send(pa, 1.40, c, _rpc(id=3, method="tasks/get", params={"taskId": "K1", "_meta": MODERN}))
    send(pa, 1.45, s, _rpc(id=3, result={"resultType": "complete", "taskId": "K1", "status": "completed"}))
    writer.add_event(pa, "stderr", "pool a: after the trace", ts=T0 + 2.0)

    send(plain, 3.01, c, _rpc(id=1, method="ping"))
    send(plain, 3.02, s, _rpc(id=1, result={}))
    for session in (a, b, pa, pb, plain):
        writer.update_session(session, status="closed", ended_at=T0 + 4)
    writer.close()
    store.close()
    return Conversations(a, b, pa, pb, plain)
