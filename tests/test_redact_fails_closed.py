"""`--redact` fails closed: a frame it cannot read is recorded without its content, with an
event saying so, and the session goes on being recorded and closes as usual."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from mcptape.gateway.store import RedactingWriter
from mcptape.redact import Unreadable, parse_json_path, redact_json_paths
from mcptape.wire.frame import Frame
from tests.helpers.inprocess import running_gateway
from tests.helpers.recording import INITIALIZE
from tests.helpers.upstreams import HeaderLog, echo_app, serving

SECRET = "hunter2-correct-horse"
PATH = parse_json_path("/params/arguments/password")
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def call(rid: int, **extra: Any) -> bytes:
    arguments = {"password": SECRET, **extra}
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "login", "arguments": arguments},
        }
    )


DEEP = call(2).replace(b'"name":"login"', b'"name":"login","deep":' + b"[" * 100_000 + b"]" * 100_000)
LATIN1 = call(3, note="caf\xe9").replace("caf\xe9".encode(), b"caf\xe9")  # one byte that is not UTF-8


def test_a_latin1_byte_elsewhere_does_not_keep_the_secret_from_being_redacted() -> None:
    out = redact_json_paths(LATIN1, [PATH])
    assert out is not None and SECRET.encode() not in out
    assert b"caf\xe9" in out  # the other bytes as they were


@pytest.mark.parametrize("data", [DEEP, b'{"params": {"arguments": {"password": "' + SECRET.encode() + b'"'])
def test_what_redaction_cannot_read_is_refused_not_passed_on(data: bytes) -> None:
    with pytest.raises(Unreadable):
        redact_json_paths(data, [PATH])


class Collect:
    def __init__(self) -> None:
        self.frames: list[tuple[str, Frame]] = []
        self.events: list[tuple[str, Any]] = []
        self.updates: list[dict[str, Any]] = []

    def add_frame(self, session_id: str, seq: int, frame: Frame) -> None:
        self.frames.append((session_id, frame))

    def add_event(self, session_id: str, kind: str, text: str | None = None, data: object = None) -> None:
        self.events.append((kind, data))

    def update_session(self, session_id: str, **fields: Any) -> None:
        self.updates.append(fields)


def test_a_withheld_hello_keeps_what_it_would_teach_out_of_the_session_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    writer = Collect()
    redacting = RedactingWriter(writer, [parse_json_path("/params/clientInfo/token")])  # type: ignore[arg-type]
    nested = b"[" * 50_000 + b"]" * 50_000  # deeper than redaction follows, shallow enough to classify
    token = b'"token":"' + SECRET.encode() + b'","d":' + nested
    hello = orjson.dumps(INITIALIZE).replace(b'"name":"t"', b'"name":"t",' + token)
    redacting.add_frame("s", 1, Frame(hello, "c2s"))
    learnt = {"client_name": "t", "client_info": '{"token": "' + SECRET + '"}', "protocol_version": "x"}
    redacting.update_session("s", **learnt)
    redacting.add_frame("s", 2, Frame(call(2, d=[]).replace(b"[]", nested), "c2s"))
    [(_, first), (_, second)] = writer.frames
    assert (first.kind, first.method, first.rpc_id) == ("request", "initialize", "0")
    assert orjson.loads(first.data)["mcptape_withheld"]["bytes"] == len(hello)
    assert (second.kind, second.method, second.rpc_id) == ("request", "tools/call", "2")
    assert SECRET.encode() not in first.data + second.data
    assert writer.updates == [{"protocol_version": "x"}]
    assert [kind for kind, _ in writer.events] == ["redaction_failed", "redaction_failed"]
    assert capsys.readouterr().err.count("--redact could not read frame") == 1  # once per session


def test_the_gateway_records_on_past_frames_it_cannot_redact_and_never_stores_the_secret(
    tmp_path: Path,
) -> None:
    db = tmp_path / "g.db"

    async def main() -> int:
        log = HeaderLog()
        async with serving(echo_app(log)) as url:
            spec = UpstreamSpec(name="u", transport="http", url=url)
            config = GatewayConfig(registry={"u": spec}, token=None, db=str(db), redact_paths=(PATH,))
            async with running_gateway(config) as g, aiohttp.ClientSession() as http:
                headers = dict(ACCEPT)
                async with http.post(g.url("u"), json=INITIALIZE, headers=headers) as response:
                    headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
                for body in [DEEP, LATIN1, *(call(10 + i) for i in range(6))]:
                    async with http.post(g.url("u"), data=body, headers=headers) as response:
                        await response.read()
                async with http.delete(g.url("u"), headers=headers) as response:
                    return response.status

    assert asyncio.run(asyncio.wait_for(main(), 60)) == 200
    con = sqlite3.connect(db)
    frames = con.execute(
        "select kind, method, text, raw from frames where direction = 'c2s' order by seq"
    ).fetchall()
    [(status,)] = con.execute("select status from sessions").fetchall()
    events = con.execute("select kind, text from events where kind = 'redaction_failed'").fetchall()
    everything = con.execute("select group_concat(text, '') from events").fetchone()[0]
    con.close()
    assert status == "closed"
    assert len(frames) == 9  # initialize, the deep one, the Latin-1 one and the six after them
    # 200,000 brackets are past what is scanned for a method: the deep one is "malformed"
    assert [(kind, method) for kind, method, _, _ in frames[2:]] == [("request", "tools/call")] * 7
    assert "mcptape_withheld" in frames[1][2] and "nested deeper" in frames[1][2]
    assert all(
        SECRET not in (text or "") and SECRET.encode() not in (raw or b"") for _, _, text, raw in frames
    )
    assert SECRET not in everything
    assert len(events) == 1 and "could not read frame" in events[0][1]
