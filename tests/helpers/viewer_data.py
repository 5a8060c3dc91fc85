"""Test helper: a recording database with the sessions the viewer's tests look at.

``weather`` (record, 2025-06-18 over HTTP metadata) has a handshake, tools, progress, a
sampling request answered by a rule (origin proxy), an error reply, a line that is not
UTF-8 and stderr; ``weather`` again as its replay, whose humidity differs; ``modern``
(2026-07-28) has an ``input_required`` round with its retry and a task with its polls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcptape.store import open_store
from mcptape.wire.frame import Frame

T0 = 1_800_000_000.0
HTTP_META = {"http_method": "POST", "path": "/mcp", "status": 200, "stream": "post",
             "headers": {"mcp-session-id": "abc123", "mcp-protocol-version": "2025-06-18"}}  # fmt: skip


@dataclass
class Sample:
    original: str
    replay: str
    modern: str


class _Session:
    def __init__(self, writer: Any, t0: float, **fields: Any) -> None:
        self.writer = writer
        self.id = writer.create_session(started_at=t0, **fields)
        self.seq = 0
        self.t = t0

    def send(self, direction: str, message: Any, *, after: float = 0.005, origin: str | None = None,
             meta: dict[str, Any] | None = None, data: bytes | None = None) -> int:  # fmt: skip
        self.seq += 1
        self.t += after
        body = data if data is not None else orjson.dumps(message)
        self.writer.add_frame(self.id, self.seq, Frame(body, direction, origin, self.t, meta))  # type: ignore[arg-type]
        return self.seq

    def event(self, kind: str, text: str) -> None:
        self.writer.add_event(self.id, kind, text, ts=self.t)


def _weather(session: _Session, humidity: int) -> None:
    c, s = "c2s", "s2c"
    session.event("process_start", "weather-server --port 0")
    session.send(c, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "inspector", "version": "0.9"}}})  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "weather-server", "version": "2.1"}}}, after=0.04, meta=HTTP_META)  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.send(c, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    session.send(s, {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "weather", "inputSchema": {"type": "object"}}]}}, meta=HTTP_META)  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "weather", "arguments": {"city": "Lisbon"}, "_meta": {"progressToken": 7}}})  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": 1, "total": 2}})  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}], "maxTokens": 50}})  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 0, "result": {
        "role": "assistant", "content": {"type": "text", "text": "Sunny"}, "model": "canned"}}, origin="proxy")  # fmt: skip
    session.event("stderr", "fetching the forecast for Lisbon")
    session.event("stderr", "<img src=x onerror=\"document.title='owned'\"> \x1b]0;title\x07")
    result = {
        "content": [{"type": "text", "text": "Sunny, 21 C"}],
        "structuredContent": {"city": "Lisbon", "humidity": humidity},
    }
    session.send(s, {"jsonrpc": "2.0", "id": 2, "result": result}, after=0.12, meta=HTTP_META)
    session.send(
        c, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "weather", "arguments": {}}}
    )
    session.send(
        s, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "city is required"}}, after=0.002
    )
    session.send(s, None, data=b"garbage \xff\xfe not json")
    session.event("process_exit", "exit status 0")


def _modern(session: _Session) -> None:
    c, s = "c2s", "s2c"
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "3"}}  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
    session.send(s, {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                     "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "booking", "version": "1"}}}})  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "book", "arguments": {"day": "mon"}, "_meta": meta}})  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "input_required", "requestState": "state-1",
                     "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}}}}, after=0.03)  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "book", "arguments": {"day": "mon"}, "requestState": "state-1",
        "inputResponses": {"confirm": {"action": "accept"}}, "_meta": meta}}, after=0.5)  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "content": [{"type": "text", "text": "booked"}]}}, after=0.04)  # fmt: skip
    session.send(c, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "render", "arguments": {}, "task": {"ttl": 60000}, "_meta": meta}})  # fmt: skip
    session.send(s, {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "complete", "task": {"taskId": "task-9", "status": "working"}}})  # fmt: skip
    for rpc_id, status in ((5, "working"), (6, "completed")):
        session.send(c, {"jsonrpc": "2.0", "id": rpc_id, "method": "tasks/get", "params": {"taskId": "task-9", "_meta": meta}}, after=0.2)  # fmt: skip
        session.send(s, {"jsonrpc": "2.0", "id": rpc_id, "result": {"resultType": "complete", "taskId": "task-9", "status": status}})  # fmt: skip
    session.send(
        c,
        {"jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": {"taskId": "task-9", "_meta": meta}},
    )
    session.send(s, {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}})  # fmt: skip


def build_sample(db: Path | str) -> Sample:
    """Write the three sessions into ``db`` (created if needed); returns their ids."""
    store = open_store(str(db))
    try:
        writer = store.writer()
        original = _Session(writer, T0, mode="record", name="weather", transport="stdio->http",
                            upstream="weather-server --port 0")  # fmt: skip
        _weather(original, 45)
        writer.update_session(original.id, status="closed", ended_at=original.t + 0.01, exit_code=0)
        replay = _Session(writer, T0 + 60, mode="replay", name=None, replay_of=original.id,
                          transport="stdio->stdio", upstream="weather-server --port 0")  # fmt: skip
        _weather(replay, 46)
        writer.update_session(replay.id, status="closed", ended_at=replay.t + 0.01, exit_code=0)
        modern = _Session(writer, T0 + 120, mode="proxy", name="modern", transport="http->http",
                          upstream="http://127.0.0.1:9/mcp")  # fmt: skip
        _modern(modern)
        # As the recorder fills them from the handshake (the weather sessions leave it to the reader).
        writer.update_session(modern.id, status="closed", ended_at=modern.t + 0.01, protocol_version="2026-07-28",
                              client_name="agent", server_name="booking")  # fmt: skip
        writer.close()
    finally:
        store.close()
    return Sample(original.id, replay.id, modern.id)
