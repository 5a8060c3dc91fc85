"""`mcptape mcp` in-process: its tools over a real recording, and the server through the Python SDK client."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcptape.servers.recordings.arguments import ToolFailure
from mcptape.servers.recordings.schemas import TOOLS
from mcptape.servers.recordings.server import build_server
from mcptape.servers.recordings.tools import Recordings
from tests.helpers.recorded import sample_db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_db(tmp_path_factory.mktemp("recordings") / "r.db")


@pytest.fixture
def recordings(db: Path) -> Iterator[Recordings]:
    served = Recordings(str(db))
    yield served
    served.close()


def test_list_sessions_filters_and_bounds_the_listing(recordings: Recordings) -> None:
    listed = recordings.list_sessions({})
    assert [s["name"] for s in listed["sessions"]] == ["busy", "v2", "v1"]  # latest first
    assert listed["truncated"] is False
    assert [s["name"] for s in recordings.list_sessions({"name": "v*"})["sessions"]] == ["v2", "v1"]
    assert [s["name"] for s in recordings.list_sessions({"server": "busy-*"})["sessions"]] == ["busy"]
    limited = recordings.list_sessions({"limit": 1})
    assert len(limited["sessions"]) == 1 and limited["truncated"] is True
    assert recordings.list_sessions({"since": "2999-01-01"})["sessions"] == []
    assert len(recordings.list_sessions({"until": "2999-01-01T00:00", "mode": "record"})["sessions"]) == 3
    first = listed["sessions"][0]
    assert (first["frames"], first["status"], first["server"]) == (64, "closed", "busy-server 1")


def test_show_session_pages_exchanges_and_cuts_long_texts(recordings: Recordings) -> None:
    page = recordings.show_session({"session": "busy", "limit": 10, "max_chars": 100})
    assert (page["total"], len(page["exchanges"]), page["next_cursor"]) == (32, 10, 10)
    call = page["exchanges"][1]
    assert (call["method"], call["answered_by"], call["is_error"]) == ("tools/call", "server", 0)
    assert call["response"].endswith("more characters]") and len(call["response"]) < 200
    last = recordings.show_session({"session": "busy", "cursor": 30, "events": True})
    assert last["next_cursor"] is None
    assert (last["exchanges"][-1]["method"], last["exchanges"][-1]["error_code"]) == ("nope/method", -32601)
    assert "stderr" in [e["kind"] for e in last["events"]]


def test_query_runs_read_only_and_bounds_rows_and_values(recordings: Recordings) -> None:
    found = recordings.query({"sql": "select tool, count(*) as n from tool_calls group by 1"})
    assert (found["columns"], found["rows"]) == (["tool", "n"], [["echo", 30]])
    cut = recordings.query({"sql": "select response from exchanges", "max_rows": 3, "max_chars": 50})
    assert (cut["row_count"], cut["truncated"]) == (3, True)
    assert cut["values_cut"] >= 1
    with pytest.raises(ToolFailure, match="only reads the recording"):
        recordings.query({"sql": "delete from sessions"})
    with pytest.raises(ToolFailure, match="SQL error: no such table: nowhere"):
        recordings.query({"sql": "select * from nowhere"})
    slow = "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
    with pytest.raises(ToolFailure, match=r"time limit of 0\.2 s"):
        recordings.query({"sql": slow, "timeout": 0.2})


def test_diff_reports_a_tool_added_between_two_recordings(recordings: Recordings) -> None:
    report = recordings.diff({"a": "v1", "b": "v2"})
    assert [(c["action"], c["name"], c["severity"]) for c in report["changes"]] == [
        ("added", "shout", "compatible")
    ]
    assert report["breaking"] == 0 and report["summary"].startswith("0 breaking, 1 compatible")


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("show_session", {"session": "nothing-like-it"}, "no session 'nothing-like-it'"),
        ("show_session", {}, "show_session: session is required"),
        ("list_sessions", {"limt": 3}, "unknown argument 'limt'; did you mean 'limit'?"),
        ("list_sessions", {"limit": 100000}, "limit must be from 1 to 500"),
        ("list_sessions", {"since": "yesterday"}, "neither ISO 8601"),
        ("query", {"sql": 3}, "sql must be a string"),
        ("diff", {"a": "v1", "b": "gone"}, "no session 'gone'"),
    ],
)
def test_a_bad_call_fails_in_one_line(recordings: Recordings, tool: str, arguments: Any, says: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        getattr(recordings, tool)(arguments)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_replay_refuses_a_server_that_is_not_registered(recordings: Recordings) -> None:
    with pytest.raises(ToolFailure, match="replay runs registered servers only: unknown upstream 'rm -rf /'"):
        anyio.run(recordings.replay, {"session": "v1", "server": "rm -rf /"})


def test_an_older_database_is_refused_with_what_to_do_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sample_db(path)
    con = sqlite3.connect(path)
    con.execute("update alembic_version set version_num = '0004'")
    con.commit()
    con.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ToolFailure, match="recorded by an older mcptape"):
        Recordings(str(path)).list_sessions({})
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_no_database_is_one_line_and_creates_none(tmp_path: Path) -> None:
    with pytest.raises(ToolFailure):
        Recordings(str(tmp_path / "none.db")).list_sessions({})
    assert not (tmp_path / "none.db").exists()


def test_the_sdk_client_validates_every_structured_result_against_its_output_schema(db: Path) -> None:
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    async def main() -> dict[str, Any]:
        recordings = Recordings(str(db))
        try:
            async with Client(build_server(recordings), mode="legacy") as client:
                listed = await client.list_tools()
                out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
                # The SDK checks structuredContent against each tool's outputSchema.
                for name, arguments in (
                    ("list_sessions", {"limit": 2}),
                    ("show_session", {"session": "busy", "limit": 2, "events": True}),
                    ("query", {"sql": "select * from sessions"}),
                    ("diff", {"a": "v1", "b": "v2"}),
                    ("show_session", {"session": "gone"}),
                ):
                    out[f"{name} {len(out)}"] = await client.call_tool(name, arguments)
                resources = await client.list_resources()
                out["resources"] = [str(r.uri) for r in resources.resources]
                out["tool_calls"] = await client.read_resource("mcptape://views/tool_calls")
                return out
        finally:
            recordings.close()

    out = anyio.run(main)
    assert set(out["tools"]) == set(TOOLS)
    assert all(t.output_schema and t.annotations.read_only_hint for t in out["tools"].values())
    results = [value for key, value in out.items() if " " in key]
    assert [r.is_error for r in results] == [False, False, False, False, True]
    assert results[0].structured_content["sessions"][0]["name"] == "busy"
    assert "no session 'gone'" in results[-1].content[0].text
    assert "mcptape://views/exchanges" in out["resources"] and "mcptape://views" in out["resources"]
    text = out["tool_calls"].contents[0].text
    assert "`tool`" in text and "json_extract(e.request, '$.params.name')" in text
    # Nothing was written.
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def _types(schema: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(schema, dict):
        if "type" in schema:
            yield path, schema["type"]
        for key, value in schema.items():
            yield from _types(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _types(value, f"{path}/{i}")


def test_every_schema_gives_each_type_alone_so_single_type_clients_take_the_tools() -> None:
    # The Inspector's `--method tools/list --strict` warned 38 times of type arrays
    # (["string", "null"]): clients mapping schemas onto one type per value may refuse them.
    types = [(f"{name}{path}", kind) for name, tool in TOOLS.items() for path, kind in _types(tool)]
    assert types and all(isinstance(kind, str) for _, kind in types), [
        t for t in types if not isinstance(t[1], str)
    ]
    nullable = TOOLS["list_sessions"]["output"]["properties"]["sessions"]["items"]["properties"]["name"]
    assert nullable == {"anyOf": [{"type": "string"}, {"type": "null"}]}
