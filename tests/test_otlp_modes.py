"""`--otlp URL` on record, call, replay and serve, end to end: real server-everything, a real receiver.

Each command runs as a process; the OTLP/HTTP receiver (tests/helpers/otlp.py) runs in
this test's event loop and decodes what OpenTelemetry's exporter posts with
opentelemetry-proto.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.otlp import OtlpReceiver
from tests.helpers.paths import MCPTAPE, everything_server_cmd

pytestmark = pytest.mark.slow

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
CLIENT, SERVER = 3, 2


def _lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages)


SCRIPT = _lines(
    {"id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"method": "notifications/initialized"},
    {"id": 2, "method": "tools/call",
     "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}}},
    {"id": 3, "method": "prompts/get", "params": {"name": "no-such-prompt"}},
)  # fmt: skip


def _server() -> list[str]:
    cmd = everything_server_cmd()
    assert cmd is not None, "tests/npm is not installed: run npm ci in tests/npm"
    return cmd


async def _run(*args: str, stdin: bytes = b"") -> tuple[int, bytes, str]:
    proc = await asyncio.create_subprocess_exec(
        *MCPTAPE, *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin), 90)
    return proc.returncode or 0, out, err.decode()


def _with_receiver(*args: str, stdin: bytes = b"") -> tuple[OtlpReceiver, tuple[int, bytes, str]]:
    receiver = OtlpReceiver()

    async def scenario() -> tuple[int, bytes, str]:
        url = await receiver.start()
        try:
            return await _run(args[0], "--otlp", url, *args[1:], stdin=stdin)
        finally:
            await receiver.close()

    return receiver, asyncio.run(scenario())


def _sessions(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("select id, mode from sessions order by started_at").fetchall()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, OtlpReceiver]:
    db = tmp_path_factory.mktemp("otlp") / "rec.db"
    receiver, (code, _, err) = _with_receiver(
        "record", "--db", str(db), "--answer-wait", "5", "--", *_server(), stdin=SCRIPT
    )
    assert code == 0, err
    return db, receiver


def test_record_exports_the_real_servers_exchanges_joined_to_the_callers_trace(
    recorded: tuple[Path, OtlpReceiver],
) -> None:
    db, receiver = recorded
    [(recording, _)] = _sessions(db)
    call = receiver.named("tools/call echo")[0]
    assert call.kind == CLIENT
    assert (call.trace_id, call.parent_span_id) == (TRACE_ID, PARENT_ID)
    assert call.attributes == {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": "2",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
        "mcp.session.id": recording,
        "mcptape.session.id": recording,
        "mcptape.mode": "record",
        "mcptape.answered_by": "server",
    }
    assert call.end_ns > call.start_ns
    error = receiver.named("prompts/get no-such-prompt")[0]
    assert error.attributes["error.type"] == error.attributes["rpc.response.status_code"]
    assert (
        error.attributes["error.type"].startswith("-32") and error.status_code == 2 and error.status_message
    )
    init = receiver.named("initialize")[0]
    assert init.attributes["mcp.session.id"] == recording and init.trace_id != TRACE_ID
    points = {a["mcp.method.name"]: p for a, p in receiver.histogram("mcp.client.operation.duration")}
    assert points["tools/call"].count == 1 and points["tools/call"].sum > 0
    assert receiver.histogram("mcp.client.session.duration")


def test_call_exports_its_request_as_a_client_span(tmp_path: Path) -> None:
    receiver, (code, _, err) = _with_receiver(
        "call", "--db", str(tmp_path / "rec.db"), "-m", "tools/call", "--tool-name", "echo",
        "--tool-arg", "message=hi", "--", *_server(),
    )  # fmt: skip
    assert code == 0, err
    [call] = receiver.named("tools/call echo")
    assert call.kind == CLIENT and call.attributes["mcptape.mode"] == "call"
    assert call.attributes["network.transport"] == "pipe" and call.attributes["gen_ai.tool.name"] == "echo"
    assert receiver.histogram("mcp.client.operation.duration")


def test_replay_exports_the_new_servers_answers_in_the_recorded_trace(
    recorded: tuple[Path, OtlpReceiver],
) -> None:
    db, _ = recorded
    receiver, (code, _, err) = _with_receiver(
        "replay", "last", "--db", str(db), "--no-record", "--", *_server()
    )
    assert code == 0, err
    [call] = receiver.named("tools/call echo")
    # the recorded request carried the caller's traceparent: the replay's span joins that trace
    assert (call.kind, call.trace_id, call.parent_span_id) == (CLIENT, TRACE_ID, PARENT_ID)
    assert call.attributes["mcptape.mode"] == "replay"
    assert "mcp.session.id" not in call.attributes  # not recorded: no session id to name


def test_serve_exports_server_spans(recorded: tuple[Path, OtlpReceiver]) -> None:
    db, _ = recorded
    receiver, (code, out, err) = _with_receiver("serve", "last", "--db", str(db), stdin=SCRIPT)
    assert code == 0, err
    assert b'"hi"' in out or b"hi" in out
    [call] = receiver.named("tools/call echo")
    assert (call.kind, call.attributes["mcptape.mode"]) == (SERVER, "serve")
    assert (call.trace_id, call.parent_span_id) == (TRACE_ID, PARENT_ID)
    served = [mode for _, mode in _sessions(db) if mode == "serve"]
    assert served and call.attributes["mcp.session.id"] == _sessions(db)[-1][0]
    assert [a["mcp.method.name"] for a, _ in receiver.histogram("mcp.server.operation.duration")]


def test_proxy_exports_each_gateway_sessions_exchanges(tmp_path: Path) -> None:
    import aiohttp

    from tests.helpers.gateway_proc import GatewayProcess

    cmd = _server()
    receiver = OtlpReceiver()
    messages = [json.loads(line) for line in SCRIPT.splitlines()]

    async def scenario() -> str:
        url = await receiver.start()
        gateway = await asyncio.to_thread(
            GatewayProcess,
            tmp_path / "rec.db",
            {"everything": {"command": cmd[0], "args": cmd[1:]}},
            "--otlp",
            url,
            tmp=tmp_path,
        )
        headers = {
            "Authorization": f"Bearer {gateway.token}",
            "Accept": "application/json, text/event-stream",
        }
        try:
            async with aiohttp.ClientSession() as http:
                for message in messages:
                    async with http.post(
                        gateway.url("everything"), json=message, headers=headers
                    ) as response:
                        assert response.status in (200, 202), await response.text()
                        headers.setdefault("Mcp-Session-Id", response.headers.get("Mcp-Session-Id", ""))
                        await response.read()
                async with http.delete(gateway.url("everything"), headers=headers) as response:
                    assert response.status in (200, 204)
                for _ in range(300):  # the session ends, and its spans are exported, after the DELETE
                    if receiver.named("tools/call echo"):
                        break
                    await asyncio.sleep(0.05)
        finally:
            await asyncio.to_thread(gateway.stop)
            await receiver.close()
        return headers["Mcp-Session-Id"]

    session_id = asyncio.run(scenario())
    [call] = receiver.named("tools/call echo")
    assert (call.kind, call.trace_id, call.parent_span_id) == (CLIENT, TRACE_ID, PARENT_ID)
    assert call.attributes["mcptape.mode"] == "proxy"
    assert call.attributes["network.transport"] == "pipe"  # the hop to the stdio upstream
    # The session id the gateway minted is a credential: the span names the session by the
    # placeholder its recording holds for it (queryable there), never by the id itself.
    with sqlite3.connect(tmp_path / "rec.db") as conn:
        recorded = {
            sid
            for (sid,) in conn.execute(
                "select json_extract(meta, '$.headers.\"mcp-session-id\"') from frames "
                "where json_extract(meta, '$.headers.\"mcp-session-id\"') is not null"
            )
        }
    assert recorded == {call.attributes["mcp.session.id"]}
    assert call.attributes["mcp.session.id"].startswith("«redacted:")
    assert session_id not in json.dumps([s.attributes for s in receiver.spans])
    assert receiver.named("prompts/get no-such-prompt")[0].attributes["error.type"].startswith("-32")
