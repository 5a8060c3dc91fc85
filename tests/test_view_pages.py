"""The viewer's pure parts: the `call` command of a request, hex dumps, the timeline's arrays and statistics."""

from __future__ import annotations

from mcptape.view.detail import call_command, hex_dump
from mcptape.view.timeline import EDGES_MS, columns, groups, latency, percentile, tool_bytes


def test_a_request_becomes_the_call_command_for_the_sessions_server() -> None:
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "it's"}, "_meta": {"progressToken": 1}}}  # fmt: skip
    assert call_command(call, "npx -y server-everything") == (
        'mcptape call -m tools/call --tool-name echo --tool-args \'{"text":"it\'"\'"\'s"}\' -- npx -y server-everything'
    )
    read = {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///a b"}}
    assert call_command(read, "https://mcp.example.com/mcp") == (
        'mcptape call -m resources/read --params \'{"uri":"file:///a b"}\' --url https://mcp.example.com/mcp'
    )
    assert call_command({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, "x") is None
    assert call_command({"jsonrpc": "2.0", "method": "notifications/initialized"}, "x") is None


def test_hex_dump_shows_offsets_bytes_and_printable_text() -> None:
    dump = hex_dump(b"ab\xff\x00" + b"z" * 14)
    lines = dump.splitlines()
    assert lines[0].startswith("00000000  61 62 ff 00 7a") and lines[0].endswith("|ab..zzzzzzzzzzzz|")
    assert lines[1].startswith("00000010  7a 7a") and lines[1].endswith("|zz|")


def row(seq: int, ts: float, direction: str, kind: str, method: str | None, request_seq: int | None = None,
        size: int = 10) -> tuple[int, float, str, str, str, str | None, str | None, int, int | None]:  # fmt: skip
    origin = "client" if direction == "c2s" else "server"
    return (seq, ts, direction, origin, kind, method, str(seq), size, request_seq)


def test_columns_are_parallel_arrays_with_methods_by_index() -> None:
    rows = [row(1, 10.0, "c2s", "request", "ping"), row(2, 10.5, "s2c", "response", "ping", 1)]
    out = columns(rows, 10.0)
    assert out["seq"] == [1, 2] and out["t"] == [0.0, 500.0] and out["dir"] == [0, 1] and out["req"] == [0, 1]
    assert [out["methods"][i] for i in out["method"]] == ["ping", "ping"]
    assert [out["kinds"][i] for i in out["kind"]] == ["request", "response"]
    assert columns([], 0.0)["seq"] == []


def test_latency_per_method_has_median_p95_and_a_log_histogram() -> None:
    rows = []
    for i in range(20):
        rows.append(row(2 * i + 1, float(i), "c2s", "request", "tools/call"))
        rows.append(row(2 * i + 2, i + (i + 1) / 1000, "s2c", "response", "tools/call", 2 * i + 1))
    (stats,) = latency(rows)
    assert stats["count"] == 20 and stats["max"] == 20.0
    assert stats["median"] == 10.5 and stats["p95"] == 19.0
    assert sum(stats["hist"]) == 20 and len(stats["hist"]) == len(EDGES_MS) + 1
    assert percentile([1.0], 0.95) == 1.0


def test_tool_bytes_add_up_each_tools_results() -> None:
    rows = [row(1, 0, "c2s", "request", "tools/call"), row(2, 1, "s2c", "response", "tools/call", 1, size=300),
            row(3, 2, "c2s", "request", "tools/call"), row(4, 3, "s2c", "error", "tools/call", 3, size=50)]  # fmt: skip
    assert tool_bytes(rows, {1: "big", 3: "big"}) == [
        {"tool": "big", "calls": 2, "bytes": 350, "mean": 175, "max": 300}
    ]


def test_a_retry_without_request_state_still_joins_its_round() -> None:
    ask = {"params": {"name": "book"}}
    retry = {"params": {"name": "book", "inputResponses": {"x": {}}}}
    rows = [row(1, 0.0, "c2s", "request", "tools/call"), row(2, 0.1, "s2c", "response", "tools/call", 1),
            row(3, 0.5, "c2s", "request", "tools/call"), row(4, 0.6, "s2c", "response", "tools/call", 3),
            row(5, 0.7, "c2s", "request", "tools/call"), row(6, 0.8, "s2c", "response", "tools/call", 5)]  # fmt: skip
    messages = {1: ask, 2: {"result": {"resultType": "input_required", "inputRequests": {}}}, 3: retry,
                4: {"result": {"resultType": "complete"}}, 5: ask}  # fmt: skip
    (found,) = groups(rows, messages)
    assert found["seqs"] == [1, 3] and found["duration_ms"] == 600.0 and found["done"]


def test_every_static_file_is_package_data_so_the_wheel_ships_it() -> None:
    import fnmatch
    import tomllib
    from pathlib import Path

    import mcptape.view

    root = Path(__file__).resolve().parent.parent
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "mcptape.view"
    ]
    package = Path(mcptape.view.__file__).parent
    shipped = [p.relative_to(package).as_posix() for p in (package / "static").rglob("*") if p.is_file()]
    assert {"static/index.html", "static/app.js", "static/app.css"} <= set(shipped)
    assert all(any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns) for name in shipped)
