"""The OTLP addon in-process: a relay over memory links, a real SQLite recording, a real OTLP/HTTP receiver.

The receiver (tests/helpers/otlp.py) decodes what OpenTelemetry's exporter posts with
opentelemetry-proto; every span attribute, the span names and kinds, the trace context
continued from ``params._meta.traceparent``, the durations, ``error.type`` and the
histograms are checked as a collector would see them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mcptape.proxy.addonmanager import AddonManager, SessionContext
from mcptape.proxy.addons.otlp import OtlpExporter
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.addons.recording import BackgroundStore, SessionRow
from mcptape.proxy.links.memory import MemoryLink, memory_pair
from mcptape.proxy.relay import Relay
from mcptape.telemetry.conventions import BUCKETS
from mcptape.telemetry.sink import OtlpSink
from tests.helpers.otlp import OtlpReceiver
from tests.helpers.recording import query

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
CLIENT, SERVER = 3, 2  # opentelemetry.proto Span.SpanKind
STATUS_ERROR = 2


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 30))


def msg(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


class Session:
    """A recorded relay session with the OTLP addon, driven through memory links."""

    def __init__(self, db: Path, sink: OtlpSink, mode: str = "record", flush_wait: float = 5.0) -> None:
        self.recorder = Recorder()
        self.context = SessionContext(None, mode, "stdio->stdio", "test-server")
        self.store = BackgroundStore(
            str(db), SessionRow(mode, None, "stdio->stdio", "test-server"), self.recorder
        )
        self.otlp = OtlpExporter(sink, self.recorder, flush_wait=flush_wait)
        self.client, self.server = memory_pair(exit_code=0)
        self.relay = Relay(
            self.client, self.server, AddonManager([self.recorder, self.otlp]), self.context, grace=0.2
        )
        self.task: asyncio.Future[Any] | None = None

    async def start(self) -> tuple[MemoryLink, MemoryLink]:
        self.store.start()
        self.task = asyncio.ensure_future(self.relay.run())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return self.client, self.server

    async def finish(self) -> None:
        self.client.peer.close()
        assert self.task is not None
        await self.task
        assert await self.store.afinish()


async def exchange(client: MemoryLink, server: MemoryLink, request: bytes, answer: bytes) -> None:
    await client.peer.send(request)
    assert await server.peer.next() == request
    await server.peer.send(answer)
    assert await client.peer.next() == answer


def test_each_exchange_is_one_span_with_the_conventions_attributes_and_the_callers_trace(
    db_path: Path,
) -> None:
    receiver = OtlpReceiver()

    async def scenario() -> str:
        url = await receiver.start()
        sink = OtlpSink(url, interval=0.05, timeout=5)
        session = Session(db_path, sink)
        client, server = await session.start()
        await exchange(
            client,
            server,
            msg(id=1, method="initialize", params={"protocolVersion": "2025-06-18", "capabilities": {}}),
            msg(
                id=1,
                result={"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s"}},
            ),
        )
        await client.peer.send(msg(method="notifications/initialized"))
        await server.peer.next()
        call = msg(id=2, method="tools/call", params={"name": "echo", "_meta": {"traceparent": TRACEPARENT}})
        await client.peer.send(call)
        await server.peer.next()
        await asyncio.sleep(0.05)  # the tool takes 50 ms
        await server.peer.send(msg(id=2, result={"content": [], "isError": True}))
        await client.peer.next()
        await exchange(
            client,
            server,
            msg(id="p-3", method="prompts/get", params={"name": "greet"}),
            msg(id="p-3", error={"code": -32602, "message": "bad arguments"}),
        )
        await exchange(
            client,
            server,
            msg(id=4, method="resources/read", params={"uri": "file:///tmp/a.txt"}),
            msg(id=4, result={"contents": []}),
        )
        # the server asks the client (forwarded: mcptape waits for the client's answer)
        await server.peer.send(msg(id=7, method="sampling/createMessage", params={"messages": []}))
        await client.peer.next()
        await client.peer.send(
            msg(id=7, result={"role": "assistant", "content": {"type": "text", "text": "hi"}})
        )
        await server.peer.next()
        await client.peer.send(msg(id=5, method="tools/call", params={"name": "slow"}))  # never answered
        await server.peer.next()
        await session.finish()
        await receiver.close()
        assert session.store.session_id is not None
        return session.store.session_id

    recording = run(scenario)
    spans = {s.name: s for s in receiver.spans}
    assert sorted(spans) == sorted(
        [
            "initialize",
            "notifications/initialized",
            "tools/call echo",
            "prompts/get greet",
            "resources/read",
            "sampling/createMessage",
            "tools/call slow",
        ]
    )
    common = {
        "mcp.session.id": recording,
        "mcptape.session.id": recording,
        "mcptape.mode": "record",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
    }
    call = spans["tools/call echo"]
    assert call.attributes == {
        **common,
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": "2",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "error.type": "tool_error",
        "mcptape.answered_by": "server",
    }
    assert call.kind == CLIENT
    # the caller's trace goes on through mcptape: same trace, the caller's span as parent
    assert (call.trace_id, call.parent_span_id) == (TRACE_ID, PARENT_ID)
    assert call.status_code == STATUS_ERROR
    assert 0.05 <= (call.end_ns - call.start_ns) / 1e9 < 5
    assert call.resource["service.name"] == "mcptape"
    assert call.scope == "mcptape"

    prompt = spans["prompts/get greet"]
    assert prompt.attributes == {
        **common,
        "mcp.method.name": "prompts/get",
        "jsonrpc.request.id": "p-3",
        "gen_ai.prompt.name": "greet",
        "error.type": "-32602",
        "rpc.response.status_code": "-32602",
        "mcptape.answered_by": "server",
    }
    assert (prompt.status_code, prompt.status_message) == (STATUS_ERROR, "bad arguments")
    # without a traceparent: a trace of its own, no parent
    assert prompt.trace_id != TRACE_ID and prompt.parent_span_id == ""

    read = spans["resources/read"]
    assert read.attributes == {
        **common,
        "mcp.method.name": "resources/read",
        "jsonrpc.request.id": "4",
        "mcp.resource.uri": "file:///tmp/a.txt",
        "mcptape.answered_by": "server",
    }
    assert read.status_code == 0
    initialized = spans["notifications/initialized"]
    assert "jsonrpc.request.id" not in initialized.attributes
    assert initialized.start_ns == initialized.end_ns
    sampling = spans["sampling/createMessage"]
    assert (sampling.kind, sampling.attributes["mcptape.answered_by"]) == (CLIENT, "client")
    assert spans["tools/call slow"].attributes["error.type"] == "no_response"
    assert spans["initialize"].attributes["mcp.protocol.version"] == "2025-06-18"

    points = receiver.histogram("mcp.client.operation.duration")
    by_method = {(a["mcp.method.name"], a.get("gen_ai.tool.name")): (a, p) for a, p in points}
    attrs, point = by_method[("tools/call", "echo")]
    assert attrs == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "error.type": "tool_error",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
    }
    assert point.count == 1 and point.sum >= 0.05
    assert list(point.explicit_bounds) == list(BUCKETS)
    assert ("notifications/initialized", None) not in by_method  # nothing acknowledges a notification
    sessions = receiver.histogram("mcp.client.session.duration")
    assert len(sessions) == 1 and sessions[0][1].count == 1


def test_a_receiver_that_never_answers_neither_slows_forwarding_nor_loses_the_count(db_path: Path) -> None:
    receiver = OtlpReceiver(hang=True)

    async def scenario() -> str:
        url = await receiver.start()
        sink = OtlpSink(url, interval=0.01, timeout=1, queue_limit=4)
        session = Session(db_path, sink, flush_wait=0.2)
        client, server = await session.start()
        await exchange(client, server, msg(id=0, method="ping"), msg(id=0, result={}))
        while receiver.requests == 0:  # the exporter's thread is now stuck in its first export
            await asyncio.sleep(0.01)
        for i in range(1, 51):
            await exchange(client, server, msg(id=i, method="ping"), msg(id=i, result={}))
        await session.finish()
        await receiver.close()
        assert session.store.session_id is not None
        return session.store.session_id

    recording = run(scenario)
    # every frame was forwarded and recorded...
    assert query(db_path, "select count(*) from frames where session_id = ?", recording) == [(102,)]
    # ...and the recording says how many were not exported
    rows = query(
        db_path, "select text, data from events where session_id = ? and kind = 'otlp_dropped'", recording
    )
    assert len(rows) == 1
    data = json.loads(rows[0][1])
    assert data["dropped_frames"] >= 90
    assert f"{data['dropped_frames']} frames were not exported" in rows[0][0]


@pytest.mark.parametrize(
    ("mode", "c2s_kind", "s2c_kind"),
    [("serve", SERVER, CLIENT), ("replay", CLIENT, SERVER), ("call", CLIENT, SERVER)],
)
def test_span_kind_is_the_side_mcptape_plays(db_path: Path, mode: str, c2s_kind: int, s2c_kind: int) -> None:
    receiver = OtlpReceiver()

    async def scenario() -> None:
        url = await receiver.start()
        session = Session(db_path, OtlpSink(url, interval=0.05), mode=mode)
        client, server = await session.start()
        await exchange(client, server, msg(id=1, method="tools/list"), msg(id=1, result={"tools": []}))
        await server.peer.send(msg(id=9, method="roots/list"))
        await client.peer.next()
        await client.peer.send(msg(id=9, result={"roots": []}))
        await server.peer.next()
        await session.finish()
        await receiver.close()

    run(scenario)
    spans = {s.name: s for s in receiver.spans}
    assert (spans["tools/list"].kind, spans["roots/list"].kind) == (c2s_kind, s2c_kind)
    metric = "mcp.server.operation.duration" if mode == "serve" else "mcp.client.operation.duration"
    assert [a["mcp.method.name"] for a, _ in receiver.histogram(metric)] == ["tools/list"]


def test_a_burst_of_thousands_of_exchanges_is_exported_whole_to_a_receiver_that_keeps_up() -> None:
    receiver = OtlpReceiver()
    n = 5000  # 10,000 frames: more than the queue held when spans were made with the SDK

    async def scenario() -> OtlpSink:
        url = await receiver.start()
        sink = OtlpSink(url)  # the default bounds and batches
        otlp = OtlpExporter(sink, flush_wait=5.0)
        client, server = memory_pair(exit_code=0)
        context = SessionContext(None, "record", "stdio->stdio", "test-server")
        relay = asyncio.ensure_future(Relay(client, server, AddonManager([otlp]), context, grace=0.2).run())
        await asyncio.sleep(0)  # the relay's links start receiving (as Session.start waits)
        await asyncio.sleep(0)

        async def answer() -> None:
            for _ in range(n):
                request = json.loads(await server.peer.next())
                await server.peer.send(msg(id=request["id"], result={"content": []}))

        answering = asyncio.ensure_future(answer())
        for i in range(n):  # pipelined: every request is sent before the first answer is read
            await client.peer.send(msg(id=i, method="tools/call", params={"name": "echo"}))
        for _ in range(n):
            await client.peer.next()
        await answering
        client.peer.close()
        await relay  # the end of the session waits for the export to finish (at most 5 s)
        assert otlp.flushed is True
        await receiver.close()
        return sink

    sink = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert (sink.dropped, sink.unsent, sink.failure) == (0, 0, None)
    calls = receiver.named("tools/call echo")
    assert sorted(int(s.attributes["jsonrpc.request.id"]) for s in calls) == list(range(n))
    assert len({s.span_id for s in calls}) == n and len({s.trace_id for s in calls}) == n
    assert all(s.kind == CLIENT and s.end_ns >= s.start_ns for s in calls)
    [(attrs, point)] = receiver.histogram("mcp.client.operation.duration")
    assert attrs["gen_ai.tool.name"] == "echo" and point.count == n
