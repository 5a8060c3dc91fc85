"""Clients that read slower than their server writes get everything through the gateway: the
upstream is held back instead of events being dropped (issue 19's flood, smaller)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from tests.helpers.inprocess import running_gateway
from tests.helpers.paths import ROOT
from tests.helpers.slow_reader import Seen, legacy_flood, streamable_flood

pytestmark = pytest.mark.slow  # a stdio server process behind the gateway

FLOOD = [sys.executable, str(ROOT / "tests" / "servers" / "flood.py")]
COUNT, SIZE, RATE = 3000, 3000, 1.5e6  # 9 MB of notifications read at 1.5 MB/s


def _flood(db: Path, legacy: bool) -> Seen:
    async def main() -> Seen:
        spec = UpstreamSpec(name="flood", transport="stdio", command=FLOOD)
        config = GatewayConfig(registry={"flood": spec}, token=None, db=str(db))
        async with running_gateway(config) as g:
            # The client on a loop of its own: it must not slow the gateway down by sharing its loop.
            if legacy:
                client = legacy_flood(g.base, "flood", COUNT, SIZE, RATE, echoes=20)
            else:
                client = streamable_flood(g.url("flood"), COUNT, SIZE, RATE)
            return await asyncio.to_thread(asyncio.run, client)

    return asyncio.run(asyncio.wait_for(main(), 120))


def test_a_slow_client_gets_every_event_of_a_flood_and_the_sampling_request_in_it(tmp_path: Path) -> None:
    seen = _flood(tmp_path / "g.db", legacy=False)
    assert seen.gaps() == 0 and seen.errors == []
    assert seen.notifications == COUNT
    assert seen.sampling == 1
    assert seen.answers[1]["result"]["sampled"]["model"] == "slow-reader"  # the call completed
    con = sqlite3.connect(tmp_path / "g.db")
    cuts = con.execute("select count(*) from events where kind = 'stream_cut'").fetchone()[0]
    con.close()
    assert cuts == 0


def test_a_slow_legacy_sse_client_gets_every_answer_beside_a_flood(tmp_path: Path) -> None:
    seen = _flood(tmp_path / "g.db", legacy=True)
    assert seen.gaps() == 0 and seen.errors == []
    assert {1, *range(100, 120)} <= set(seen.answers)  # the flood's answer and 20 echoes
    assert seen.notifications == COUNT
