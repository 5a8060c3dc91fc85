"""A client session against real server processes: negotiation both ways, states, recording as mode `call`."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from mcptape.client.errors import ConnectError
from mcptape.client.session import CallSession, SessionOptions, Target
from tests.helpers.paths import ROOT, require_everything

pytestmark = pytest.mark.slow

PAGED = [sys.executable, str(ROOT / "tests" / "servers" / "paged.py")]


def _everything() -> list[str]:
    cmd = require_everything()
    return cmd


def test_a_2025_server_gets_initialize_and_the_session_is_recorded_as_call(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    states: list[str] = []
    argv = _everything()

    async def main() -> CallSession:
        options = SessionOptions(db=str(db), on_state=lambda state, detail: states.append(state))
        async with CallSession(Target("everything", argv=argv, name="ev"), options) as session:
            assert session.hello is not None
            assert session.hello.via == "initialize" and session.hello.protocol_version == "2025-11-25"
            tools = await session.core.request("tools/list")
            assert any(tool["name"] == "echo" for tool in tools["tools"])
        return session

    session = asyncio.run(main())
    assert session.recorded is True
    assert states == ["connecting", "connected", "disconnecting", "disconnected"]
    with sqlite3.connect(db) as conn:
        mode, name, transport, status = conn.execute(
            "select mode, name, transport, status from sessions"
        ).fetchone()
        methods = [
            row[0]
            for row in conn.execute(
                "select method from frames where direction = 'c2s' and method is not null order by seq"
            )
        ]
    assert (mode, name, transport) == ("call", "ev", "inproc->stdio")
    assert status in ("closed", "ok")
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert "tools/list" in methods


def test_a_2026_server_is_discovered_and_every_request_carries_the_protocol_meta() -> None:
    async def main() -> None:
        async with CallSession(Target("paged", argv=PAGED), SessionOptions(record=False)) as session:
            assert session.hello is not None
            assert (session.hello.via, session.hello.protocol_version) == ("server/discover", "2026-07-28")
            assert session.hello.server_info["name"] == "paged"
            assert session.core.meta is not None
            assert session.core.meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            result = await session.core.request("tools/list")
            assert result["nextCursor"] == "2"

    asyncio.run(main())


def test_a_forced_protocol_version_skips_the_probe() -> None:
    async def main() -> None:
        options = SessionOptions(record=False, protocol_version="2025-06-18")
        async with CallSession(Target("paged", argv=PAGED), options) as session:
            assert session.hello is not None
            assert (session.hello.via, session.hello.protocol_version) == ("initialize", "2025-06-18")

    asyncio.run(main())


def test_no_record_writes_no_database(tmp_path: Path) -> None:
    db = tmp_path / "none.db"

    async def main() -> None:
        async with CallSession(Target("paged", argv=PAGED), SessionOptions(db=str(db), record=False)):
            pass

    asyncio.run(main())
    assert not db.exists()


def test_a_command_that_does_not_exist_is_a_connect_error(tmp_path: Path) -> None:
    async def main() -> None:
        options = SessionOptions(db=str(tmp_path / "rec.db"))
        async with CallSession(Target("nothing", argv=[str(tmp_path / "no-such-server")]), options):
            pass

    with pytest.raises(ConnectError, match="not found"):
        asyncio.run(main())


FIRST_SEND_PROBE = """
import sys
from mcptape.proxy.links.looppipe import LoopProcessLink
original = LoopProcessLink.send
def send(self, frame):
    if not getattr(LoopProcessLink, "probed", False):
        LoopProcessLink.probed = True
        heavy = sorted(name for name in ("mcp", "sqlalchemy", "alembic", "aiohttp", "jsonschema") if name in sys.modules)
        print("heavy modules at the first request:", ",".join(heavy) or "none", file=sys.stderr, flush=True)
    return original(self, frame)
LoopProcessLink.send = send
from mcptape.cli.main import main

main(sys.argv[1:])
"""


def test_nothing_heavy_is_imported_before_the_first_request_is_sent(tmp_path: Path) -> None:
    import subprocess

    argv = [
        sys.executable,
        "-c",
        FIRST_SEND_PROBE,
        "call",
        "-m",
        "tools/list",
        "--db",
        str(tmp_path / "r.db"),
    ]
    proc = subprocess.run([*argv, "--", *PAGED], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "heavy modules at the first request: none" in proc.stderr
    assert (tmp_path / "r.db").exists()  # and the session was recorded all the same
