"""The viewer's data routes for a conversation's page, and a session's frames read in chunks (in process).

A conversation's frames come whole, renumbered by their place in the conversation (a
reply's ``req`` is its request's place), each with the session that recorded it
(``sess``) and its seq there (``sseq``); a large session's page gets its first frames
and where the session ends, then the rest from ``/frames`` chunk by chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mcptape.store import Store
from mcptape.store.targets import resolve_target
from mcptape.view.conversation import conversation_stats, conversation_timeline
from tests.helpers.conversations import SHARED, Conversations, build_conversations
from tests.helpers.postgres import private_server
from tests.helpers.viewer_client import AUTH, viewer_client
from tests.helpers.viewer_data import build_sample

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(conversations_store: Store) -> AsyncIterator[TestClient]:
    async with viewer_client(conversations_store) as test_client:
        yield test_client


async def get(client: TestClient, path: str) -> dict[str, Any]:
    response = await client.get(path, headers=AUTH)
    return {"status": response.status, **(await response.json())}


async def test_a_shared_conversation_is_one_timeline_of_both_replicas_rows(
    client: TestClient, conversations: Conversations
) -> None:
    body = await get(client, f"/api/sessions/{SHARED[:12]}/timeline")
    assert body["conversation"] == SHARED and not body["stitched"] and body["next"] is None
    assert [s["id"] for s in body["sessions"]] == [conversations.shared_a, conversations.shared_b]
    assert [s["replica"] for s in body["sessions"]] == ["a", "b"]
    frames = body["frames"]
    assert frames["seq"] == list(range(1, 9))  # places in the conversation
    assert list(zip(frames["sess"], frames["sseq"], strict=True)) == [
        (0, 1), (0, 2), (1, 1), (1, 2), (0, 3), (0, 4), (1, 3), (1, 4),
    ]  # fmt: skip
    # Both replicas used request id 2: each reply points at its own session's request.
    assert frames["req"] == [0, 1, 0, 3, 0, 5, 0, 7]
    assert [(e["sess"], e["text"]) for e in body["events"]] == [
        (0, "replica a: listing"),
        (1, "replica b: refused"),
    ]
    stats = await get(client, f"/api/sessions/{SHARED}/stats")
    calls = next(m for m in stats["latency"] if m["method"] == "tools/call")
    assert calls["count"] == 3
    assert {t["tool"]: t["calls"] for t in stats["tools"]} == {"read_file": 1, "list": 1, "write_file": 1}
    chunked = await get(client, f"/api/sessions/{SHARED}/frames?after=2")
    assert chunked["status"] == 400 and "whole with its timeline" in chunked["error"]


async def test_a_trace_round_retried_on_another_replica_is_one_operation(
    client: TestClient, conversations: Conversations
) -> None:
    body = await get(client, f"/api/sessions/{conversations.trace}/timeline")
    assert body["stitched"] and [s["id"] for s in body["sessions"]] == [
        conversations.pool_a,
        conversations.pool_b,
    ]
    frames = body["frames"]
    assert list(zip(frames["sess"], frames["sseq"], strict=True)) == [
        (0, 1),
        (0, 2),
        (1, 3),
        (1, 4),
        (0, 4),
        (0, 5),
    ]
    assert frames["t"][0] == 0.0  # from the conversation's first exchange
    assert [e["text"] for e in body["events"]] == ["pool b: booking"]
    stats = await get(client, f"/api/sessions/{conversations.trace}/stats")
    assert [(g["kind"], g["seqs"]) for g in stats["groups"]] == [("input_required", [1, 3]), ("task", [3, 5])]
    # A 2026-07-28 session's page lists the conversations it serves.
    pool = await get(client, f"/api/sessions/{conversations.pool_b}/stats")
    assert pool["conversations"] == [
        {"id": conversations.client, "exchanges": 1},
        {"id": conversations.trace, "exchanges": 1},
    ]
    own = await get(client, f"/api/sessions/{quote(conversations.client, safe='')}/timeline")  # a "/" in it
    assert own["conversation"] == conversations.client and own["frames"]["sseq"] == [1, 2]
    shared = await get(client, f"/api/sessions/{conversations.shared_a}/timeline")
    assert shared["conversation"] is None and shared["session"]["conversation_id"] == SHARED


async def test_an_id_naming_neither_is_a_404_saying_so(
    client: TestClient, conversations: Conversations
) -> None:
    for ref, said in (
        ("trace-abc", "no conversation 'trace-abc'"),
        ("nope", "no session or conversation 'nope'"),
    ):
        body = await get(client, f"/api/sessions/{ref}/timeline")
        assert body["status"] == 404 and body["error"].startswith(said)


async def test_a_sessions_frames_come_in_chunks_that_add_up_to_all_of_them(db_path: Path) -> None:
    from mcptape.store import open_store

    sample = build_sample(db_path)
    with open_store(str(db_path), create=False) as store:
        async with viewer_client(store) as client:
            whole = await get(client, f"/api/sessions/{sample.modern}/timeline?limit=100")
            first = await get(client, f"/api/sessions/{sample.modern}/timeline?limit=5")
            assert first["frames"]["seq"] == [1, 2, 3, 4, 5] and first["next"] == 5
            assert (
                (first["last_seq"], first["end"])
                == (whole["last_seq"], whole["end"])
                == (14, whole["frames"]["t"][-1])
            )
            got = {key: list(first["frames"][key]) for key in ("seq", "t", "req", "method", "id")}
            after, chunks = first["next"], 0
            while after is not None:
                chunk = await get(client, f"/api/sessions/{sample.modern}/frames?after={after}&limit=4")
                for key in got:
                    got[key] += chunk["frames"][key]
                after, chunks = chunk["next"], chunks + 1
            assert chunks == 3  # 6-9, 10-13, 14
            assert got == {key: whole["frames"][key] for key in got}
            assert whole["next"] is None


@pytest.mark.slow
def test_a_conversations_page_reads_the_same_on_postgresql(tmp_path: Path) -> None:
    from mcptape.store import open_store

    with private_server() as server:
        url = server.url(server.create_database())
        on_pg, on_lite = build_conversations(url), build_conversations(tmp_path / "rec.db")
        with open_store(url) as pg, open_store(str(tmp_path / "rec.db")) as lite:
            for ref in (SHARED, on_pg.trace):
                got_pg = conversation_timeline(pg, resolve_target(pg, ref))
                got_lite = conversation_timeline(lite, resolve_target(lite, ref))
                same = ("seq", "t", "sess", "sseq", "req", "kind", "dir", "size")
                lite_frames = orjson.loads(orjson.dumps(got_lite["frames"]))
                assert {k: got_pg["frames"][k] for k in same} == {k: lite_frames[k] for k in same}
                assert got_pg["events"] == got_lite["events"]
                assert conversation_stats(pg, resolve_target(pg, ref)) == conversation_stats(
                    lite, resolve_target(lite, ref)
                )
        assert on_lite.trace == on_pg.trace
