"""The viewer's pages read from PostgreSQL the same as from SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcptape.store import open_store
from mcptape.view import data, sqlpage
from mcptape.view.compare import compare_sessions
from tests.helpers.postgres import Postgres, private_server
from tests.helpers.viewer_data import build_sample

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


def test_every_page_reads_the_same_on_both_databases(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.url(postgres.create_database())
    on_pg = build_sample(url)
    on_sqlite = build_sample(tmp_path / "rec.db")
    pg, lite = open_store(url), open_store(str(tmp_path / "rec.db"))
    try:
        for session_pg, session_lite in (
            (on_pg.original, on_sqlite.original),
            (on_pg.modern, on_sqlite.modern),
        ):
            timeline_pg, timeline_lite = (
                data.session_timeline(pg, session_pg),
                data.session_timeline(lite, session_lite),
            )
            frames_pg = timeline_pg["frames"]
            methods = [frames_pg["methods"][i] for i in frames_pg["method"]]
            import orjson

            lite_methods = orjson.loads(orjson.dumps(timeline_lite["frames"]["method"]))
            assert methods == lite_methods
            assert frames_pg["seq"] == orjson.loads(orjson.dumps(timeline_lite["frames"]["seq"]))
            stats_pg, stats_lite = data.session_stats(pg, session_pg), data.session_stats(lite, session_lite)
            # A client-... conversation id holds its session's id, which differs between the two.
            for stats, session in ((stats_pg, session_pg), (stats_lite, session_lite)):
                for found in stats["conversations"]:
                    found["id"] = found["id"].replace(session, "S")
            assert stats_pg == stats_lite
        stats = data.session_stats(pg, on_pg.modern)
        assert [g["kind"] for g in stats["groups"]] == ["input_required", "task"]
        assert {t["tool"] for t in stats["tools"]} == {"book", "render"}
        relations = {r["name"]: r for r in sqlpage.schema(pg)}
        assert (
            relations["tool_calls"]["type"] == "view" and "latency_ms" in relations["tool_calls"]["columns"]
        )
        result = sqlpage.query(pg, "select tool, count(*) as n from tool_calls group by 1 order by 1")
        assert result["columns"] == ["tool", "n"] and result["rows"][0] == ["book", 1]
        with pytest.raises(sqlpage.SqlError, match="read-only"):
            sqlpage.query(pg, "delete from sessions")
        assert compare_sessions(pg, None, on_pg.replay)["summary"] == "3/4 exchanges match"
        listed = {row["id"]: row for row in data.session_list(pg)}
        assert (listed[on_pg.original]["frames"], listed[on_pg.original]["errors"]) == (13, 2)
    finally:
        pg.close()
        lite.close()
