"""`mcptape proxy` in front of stdio servers that misbehave: one that floods stdout, one
that never reads its stdin and ignores SIGTERM, one that floods stderr.

The gateway serves each on the event loop (LoopProcessLink): whatever the server does,
the gateway must keep answering other requests, end the session on DELETE, shut down
on SIGTERM within its bound, and keep what it recorded.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.helpers.db import query
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.recording import INITIALIZE as INIT

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def hostile(mode: str, *extra: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.servers.hostile", mode, *extra],
        "cwd": str(ROOT),
    }


def start(tmp_path: Path, **servers: dict[str, Any]) -> GatewayProcess:
    return GatewayProcess(tmp_path / "rec.db", servers, "--no-auth", "--idle-timeout", "60", tmp=tmp_path)


async def healthy(http: aiohttp.ClientSession, base: str) -> None:
    async with http.get(f"{base}/health", timeout=aiohttp.ClientTimeout(total=5)) as r:
        assert r.status == 200 and (await r.json())["status"] == "ok"


def test_a_server_flooding_stdout_neither_stalls_the_gateway_nor_outlives_delete(tmp_path: Path) -> None:
    gateway = start(tmp_path, flood=hostile("flood-stdout"))

    async def scenario() -> int:
        async with aiohttp.ClientSession() as http:
            async with http.post(gateway.url("flood"), json=INIT, headers=HEADERS) as r:
                assert r.status == 200
                sid = r.headers["Mcp-Session-Id"]
                events = 0
                async for line in r.content:
                    events += line.startswith(b"data:")
                    if events >= 500:
                        break
            for _ in range(5):
                await healthy(http, gateway.base)  # the loop keeps serving during the flood
            t0 = time.monotonic()
            async with http.delete(
                gateway.url("flood"),
                headers={**HEADERS, "Mcp-Session-Id": sid},
                timeout=aiohttp.ClientTimeout(total=10),
            ) as r:
                assert r.status in (200, 204)
            assert time.monotonic() - t0 < 10
            return events

    try:
        assert asyncio.run(scenario()) >= 500
        t0 = time.monotonic()
        assert gateway.stop(signal.SIGTERM, timeout=30) == 0
        assert time.monotonic() - t0 < 15
    finally:
        gateway.stop(signal.SIGKILL)
    rows = query(tmp_path / "rec.db", "select count(*) from frames where direction = 's2c'")
    assert rows[0][0] >= 500  # what the client was sent was recorded
    ended = query(tmp_path / "rec.db", "select ended_at from sessions")
    assert ended and all(row[0] is not None for row in ended)


def test_a_deaf_server_that_ignores_sigterm_is_killed_and_its_session_closed(tmp_path: Path) -> None:
    gateway = start(tmp_path, deaf=hostile("deaf"))

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            sid = None
            try:
                async with http.post(
                    gateway.url("deaf"), json=INIT, headers=HEADERS, timeout=aiohttp.ClientTimeout(total=1.5)
                ) as r:
                    sid = r.headers.get("Mcp-Session-Id")
                    await r.read()  # never answered: the client gives up
            except TimeoutError:
                pass
            await healthy(http, gateway.base)
            # A second session on the same entry is not held up by the first.
            other = None
            try:
                async with http.post(
                    gateway.url("deaf"), json=INIT, headers=HEADERS, timeout=aiohttp.ClientTimeout(total=1.5)
                ) as r:
                    other = r.status
            except TimeoutError:
                other = "waiting"  # the headers came, the answer never does: expected
            assert other in (200, "waiting")
            if sid is not None:
                async with http.delete(
                    gateway.url("deaf"),
                    headers={**HEADERS, "Mcp-Session-Id": sid},
                    timeout=aiohttp.ClientTimeout(total=10),
                ) as r:
                    assert r.status in (200, 204, 404)

    try:
        asyncio.run(scenario())
        t0 = time.monotonic()
        assert gateway.stop(signal.SIGTERM, timeout=30) == 0
        assert time.monotonic() - t0 < 20  # the grace, SIGTERM ignored, then SIGKILL
    finally:
        gateway.stop(signal.SIGKILL)
    sessions = query(tmp_path / "rec.db", "select ended_at, status from sessions")
    assert sessions and all(ended is not None for ended, _ in sessions)
    sent = query(
        tmp_path / "rec.db", "select count(*) from frames where direction = 'c2s' and method = 'initialize'"
    )
    assert sent[0][0] >= 1  # the request the server never read is on record


def test_a_server_flooding_stderr_still_answers_through_the_gateway(tmp_path: Path) -> None:
    gateway = start(tmp_path, loud=hostile("flood-stderr", "--bytes", str(20 << 20)))

    async def scenario() -> dict[str, Any]:
        # The echo server sends the request back: to the client it is a request from the server.
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                gateway.url("loud"), json=INIT, headers=HEADERS, timeout=aiohttp.ClientTimeout(total=20)
            ) as r,
        ):
            assert r.status == 200
            async for line in r.content:
                if line.startswith(b"data:"):
                    return dict(json.loads(line[5:]))
        raise AssertionError("no event came back")

    try:
        echoed = asyncio.run(scenario())
        assert echoed["method"] == "initialize"
        assert gateway.stop(signal.SIGTERM, timeout=30) == 0
    finally:
        gateway.stop(signal.SIGKILL)
    logged = query(
        tmp_path / "rec.db",
        "select count(*), coalesce(sum(length(text)), 0) from events where kind like 'stderr%'",
    )
    assert logged[0][0] > 0
    assert logged[0][1] < 20 << 20  # rate-limited: not all of the flood reached the database


def test_a_session_its_client_deleted_is_recorded_closed_even_if_sigterm_comes_while_it_ends(
    tmp_path: Path,
) -> None:
    # The server ignores end of input and takes 0.3 s to clean up on SIGTERM: after the
    # DELETE its session is still ending (grace, then SIGTERM) when the gateway is stopped.
    report = tmp_path / "report.json"
    slow = {
        "command": sys.executable,
        "args": ["-m", "tests.servers.lingering_mcp", str(report)],
        "cwd": str(ROOT),
    }
    gateway = GatewayProcess(tmp_path / "rec.db", {"slow": slow}, "--no-auth", "--grace", "1", tmp=tmp_path)

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            async with http.post(gateway.url("slow"), json=INIT, headers=HEADERS) as r:
                sid = r.headers["Mcp-Session-Id"]
                await r.read()
            async with http.delete(gateway.url("slow"), headers={**HEADERS, "Mcp-Session-Id": sid}) as r:
                assert r.status in (200, 204)

    try:
        asyncio.run(scenario())
        assert gateway.stop(signal.SIGTERM, timeout=30) == 0
    finally:
        gateway.stop(signal.SIGKILL)
    assert report.exists()  # the server was still there to be told to stop
    rows = query(tmp_path / "rec.db", "select status from sessions")
    assert rows == [("closed",)], rows
