"""The gateway against a hostile HTTP client: bytes that are no UTF-8 where the token goes,
requests aiohttp cannot parse, and a session that asks for many large answers."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from pathlib import Path

import pytest

from mcptape.proxy.http.eventstream import KEEP_CLOSED_BYTES
from tests.helpers.gateway_http import BIG, INIT, fetch, request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.inprocess import running_gateway

TOKEN = "hostile-tests-token"


def raw_exchange(base: str, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and read until the gateway closes it."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def post_head(base: str, extra: bytes, length: int) -> bytes:
    host = base.removeprefix("http://").encode()
    return (
        b"POST /servers/demo/mcp HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nConnection: close\r\n"
        + extra
        + b"Content-Length: %d\r\n\r\n" % length
    )


@pytest.mark.slow
def test_a_token_that_is_no_utf8_is_401_and_unparsable_requests_log_one_line(tmp_path: Path) -> None:
    env = {"MCPTAPE_PROXY_TOKEN": TOKEN}
    gateway = GatewayProcess(tmp_path / "g.db", None, env=env, tmp=tmp_path)
    try:
        for header in (
            b"X-Mcptape-Token: \xff\xfe" + TOKEN.encode(),
            b"Authorization: Bearer \xff" + TOKEN.encode(),
        ):
            answer = raw_exchange(gateway.base, post_head(gateway.base, header + b"\r\n", len(INIT)) + INIT)
            assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
        # Requests aiohttp refuses before any handler: a CR inside a header value (a
        # header-injection attempt), a bad chunk size, two Content-Lengths.
        for extra in (
            b"Mcp-Session-Id: abc\rInjected: 1\r\n",
            b"Transfer-Encoding: chunked\r\n",
            b"Content-Length: 5\r\n",
        ):
            body = b"zz\r\n" + INIT + b"\r\n0\r\n\r\n" if b"chunked" in extra else INIT
            answer = raw_exchange(gateway.base, post_head(gateway.base, extra, len(INIT)) + body)
            assert answer.startswith(b"HTTP/1.0 400 ") or answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        ok = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
        status, _, _ = request(gateway.base, "POST", "/servers/demo/mcp", ok, INIT)
        assert status == 200
    finally:
        gateway.stop()
    assert "Traceback" not in gateway.stderr
    assert gateway.stderr.count("mcptape: bad HTTP request (400): ") == 3, gateway.stderr


@pytest.mark.slow
def test_closed_response_streams_keep_a_bounded_number_of_bytes_for_resumption(tmp_path: Path) -> None:
    size = 2 << 20
    calls = KEEP_CLOSED_BYTES // size + 4
    config = {"big": {"command": sys.executable, "args": [str(BIG), "--size", str(size)]}}
    gateway = GatewayProcess(tmp_path / "g.db", config, "--no-auth", tmp=tmp_path)
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        status, sid, _ = fetch(gateway.base, "POST", accept, INIT)
        assert status == 200 and sid
        session = {**accept, "Mcp-Session-Id": sid}
        ids = []
        for n in range(calls):
            call = {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": {"name": "x"}}
            status, _, body = fetch(gateway.base, "POST", session, json.dumps(call).encode())
            assert status == 200 and len(body) > size
            found = re.search(rb"^id: (\S+)$", body, re.M)
            assert found is not None
            ids.append(found.group(1).decode())

        def resumed(event_id: str) -> int:
            got = {**session, "Last-Event-ID": event_id.rsplit("-", 1)[0] + "-0"}
            status, _, body = fetch(gateway.base, "GET", got)
            assert status != 200 or len(body) > size
            return status

        # The newest answers can still be fetched again; the oldest were let go.
        assert resumed(ids[-1]) == 200 and resumed(ids[-2]) == 200
        assert resumed(ids[0]) == 404
    finally:
        gateway.stop()


@pytest.mark.slow
def test_sessions_past_max_sessions_get_a_503_saying_so_until_one_ends(tmp_path: Path) -> None:
    config = {"big": {"command": sys.executable, "args": [str(BIG), "--size", "10"]}}
    gateway = GatewayProcess(tmp_path / "g.db", config, "--no-auth", "--max-sessions", "2", tmp=tmp_path)
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        sids = []
        for _ in range(2):
            status, sid, _ = fetch(gateway.base, "POST", accept, INIT)
            assert status == 200 and sid
            sids.append(sid)
        status, sid, body = fetch(gateway.base, "POST", accept, INIT)
        assert (status, sid) == (503, "")
        message = json.loads(body)["error"]["message"]
        assert "already runs 2 sessions (--max-sessions 2)" in message and "DELETE" in message
        # The legacy SSE endpoint opens sessions too, and is refused the same way.
        assert request(gateway.base, "GET", "/servers/big/sse", {"Accept": "text/event-stream"})[0] == 503
        # The sessions already open are served as before.
        ping = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode()
        assert fetch(gateway.base, "POST", {**accept, "Mcp-Session-Id": sids[0]}, ping)[0] == 200
        assert fetch(gateway.base, "DELETE", {"Mcp-Session-Id": sids[1]})[0] == 200
        for _ in range(200):  # the deleted session's server takes a moment to stop
            status, sid, _ = fetch(gateway.base, "POST", accept, INIT)
            if status != 503:
                break
        assert status == 200 and sid
    finally:
        gateway.stop()
    assert "Traceback" not in gateway.stderr


@pytest.mark.slow
def test_a_remote_entry_whose_header_has_a_line_break_is_a_502_naming_it(tmp_path: Path) -> None:
    config = {"r": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "v\r\nInjected: 1"}}}
    gateway = GatewayProcess(tmp_path / "g.db", config, "--no-auth", tmp=tmp_path)
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        status, _, body = request(gateway.base, "POST", "/servers/r/mcp", accept, INIT)
        assert status == 502
        assert "header 'X-A' has a line break or NUL in its value" in json.loads(body)["error"]["message"]
    finally:
        gateway.stop()
    assert "Traceback" not in gateway.stderr


def test_a_client_sending_its_headers_a_byte_at_a_time_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptape.gateway import listener
    from mcptape.gateway.app import GatewayConfig

    monkeypatch.setattr(listener, "CONNECTION_IDLE_S", 0.5)

    async def main() -> tuple[bool, bool]:
        async with running_gateway(GatewayConfig(registry={})) as running:
            return await cut_off(running.port)

    async def cut_off(port: int) -> tuple[bool, bool]:
        slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
        idle_reader, idle = await asyncio.open_connection("127.0.0.1", port)
        head = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode() + b"a" * 1000
        cut = False
        for i in range(len(head)):  # a byte every 20 ms: 20 s if it is never cut
            slow.write(head[i : i + 1])
            try:
                await asyncio.wait_for(slow.drain(), 1)
                if await asyncio.wait_for(slow_reader.read(100), 0.02) == b"":
                    cut = True
                    break
            except TimeoutError:
                continue
            except ConnectionError:
                cut = True
                break
        idle_cut = await asyncio.wait_for(idle_reader.read(100), 10) == b""
        slow.close()
        idle.close()
        return cut, idle_cut

    cut, idle_cut = asyncio.run(main())
    assert cut and idle_cut


def test_a_body_that_stops_arriving_is_a_408_not_a_handler_held_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    from mcptape.config.registry import UpstreamSpec
    from mcptape.gateway.app import GatewayConfig
    from mcptape.proxy.http import bodies

    monkeypatch.setattr(bodies, "BODY_IDLE_S", 0.5)

    async def main() -> bytes:
        spec = UpstreamSpec(name="big", transport="stdio", command=[sys.executable, str(BIG)])
        async with running_gateway(GatewayConfig(registry={"big": spec}, token=None)) as running:
            return await stalled(running.port)

    async def stalled(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            post_head(f"http://127.0.0.1:{port}", b"", len(INIT)).replace(b"demo", b"big") + INIT[:10]
        )
        await writer.drain()
        answer = b""
        while b"without more)" not in answer:  # the rest of the body never comes
            chunk = await asyncio.wait_for(reader.read(4096), 20)
            if not chunk:
                break
            answer += chunk
        writer.close()
        return answer

    answer = asyncio.run(main())
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"the request body stopped arriving (10 bytes" in answer


def test_an_upstream_header_with_a_control_character_is_a_502_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # aiohttp reads such a header from the upstream, then refuses to write it to the client:
    # the client got a broken answer, and the log a traceback.
    from mcptape.config.registry import UpstreamSpec
    from mcptape.gateway.app import GatewayConfig

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Ctl: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    async def main() -> tuple[int, str]:
        upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{upstream.sockets[0].getsockname()[1]}/mcp"
        config = GatewayConfig(
            registry={"r": UpstreamSpec(name="r", transport="http", url=url)}, db=str(tmp_path / "g.db")
        )
        async with running_gateway(config) as running:
            reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
            writer.write(
                f"POST /servers/r/mcp HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(INIT)}\r\n\r\n".encode()
                + INIT
            )
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            length = int(re.search(r"Content-Length: (\d+)", head, re.I)[1])  # type: ignore[index]
            body = await reader.readexactly(length)
            writer.close()
        upstream.close()
        return int(head.split()[1]), json.loads(body)["error"]["message"]

    status, message = asyncio.run(main())
    assert status == 502 and "a control character in its 'X-Ctl' header: not forwarded" in message
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_a_compressed_request_body_is_a_415_and_never_inflated() -> None:
    # aiohttp inflated it as it arrived, before any bound: 1 MB of gzip took the gateway
    # to 1.9 GB. A small one (a valid initialize) shows the body is no longer inflated.
    import gzip

    import aiohttp

    from mcptape.gateway.app import GatewayConfig
    from tests.helpers.inprocess import demo_server

    async def main() -> tuple[int, str, str, list[str]]:
        async with (
            running_gateway(GatewayConfig(registry={}), {"demo": demo_server}) as running,
            aiohttp.ClientSession() as http,
        ):
            headers = {
                "Content-Encoding": "gzip",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            async with http.post(running.url("demo"), data=gzip.compress(INIT), headers=headers) as response:
                answer = (response.status, await response.text(), response.headers.get("Accept-Encoding", ""))
            return (*answer, list(running.upstreams.opened))

    status, text, accepted, opened = asyncio.run(main())
    assert status == 415 and "Content-Encoding 'gzip' is not taken; send it uncompressed" in text
    assert accepted == "identity" and opened == []
