"""A gateway opening a database closes the sessions whose recording process is gone."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from mcptape.gateway.app import Gateway, GatewayConfig
from mcptape.store import open_store


def _pid_nobody_has() -> int:
    # Pids are below pid_max: no process ever has pid_max itself.
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def test_a_gateway_marks_the_sessions_of_a_killed_process_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    store = open_store(str(db))
    lost = store.create_session(mode="proxy", name="killed", pid=_pid_nobody_has())
    alive = store.create_session(mode="proxy", name="alive")  # this process: still running
    store.close()

    async def main() -> None:
        gateway = Gateway(GatewayConfig(registry={}, db=str(db)))
        await gateway.start()
        await gateway.shutdown("test")

    asyncio.run(main())
    con = sqlite3.connect(db)
    statuses = dict(con.execute("select id, status from sessions").fetchall())
    [error] = con.execute("select error from sessions where id = ?", (lost,)).fetchone()
    con.close()
    assert statuses == {lost: "interrupted", alive: "running"}
    assert "ended without closing the session" in error
