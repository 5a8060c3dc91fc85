"""View queries on one large session against a full scan of ``frames``.

Records one session of N frames (default 200,000) through the Writer, as ``record``
would: tools/call requests with a progress notification and a result, a log message
now and then, a server request (sampling) answered by the client, and 1,000 requests
that are never answered, spread over the session. Then times each view query and
divides by the time of a full scan of ``frames`` on the same database (reading every
row's text). DESIGN.md's target: each ratio at most 5.

    .venv/bin/python bench/bench_views.py [--frames N] [--unanswered K] [--db URL] [--http]

``--db URL`` runs on a server database (PostgreSQL) instead of a temporary SQLite file.
``--http`` gives every frame the HTTP metadata the gateway records (method, path,
stream, status, headers, SSE event id), as a session recorded by ``mcptape proxy``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import orjson

from mcptape.store import open_store
from mcptape.wire.frame import Frame

BASELINE = "SELECT count(*), sum(length(text)) FROM frames"
QUERIES = {
    "exchanges count": "SELECT count(*) FROM exchanges",
    "exchanges unanswered": "SELECT count(*) FROM exchanges WHERE response_seq IS NULL",
    "tool_calls (README)": "select tool, count(*), round(avg(latency_ms), 2) as ms from tool_calls group by 1",
    "tool_calls count": "SELECT count(*) FROM tool_calls",
    "server_requests": "SELECT count(*), sum(latency_ms) FROM server_requests",
    "log_messages": "SELECT level, count(*) FROM log_messages GROUP BY 1",
    "messages": "SELECT count(*) FROM messages",
    "http_frames (SSE replies)": "SELECT stream, sse, count(*) FROM http_frames WHERE kind = 'response' GROUP BY 1, 2",
    "frames by method (README)": "select method, count(*) from frames group by 1",
}


def session_frames(count: int, unanswered: int, t0: float) -> list[Frame]:
    """A plausible session of ``count`` frames with ``unanswered`` requests nobody answers."""
    out: list[Frame] = []
    every = max(1, count // max(1, unanswered) // 3)
    call = 0
    left = unanswered
    while len(out) < count:
        call += 1
        ts = t0 + call * 0.001
        request = {
            "jsonrpc": "2.0",
            "id": call,
            "method": "tools/call",
            "params": {"name": f"tool{call % 7}", "arguments": {"n": call}, "_meta": {"progressToken": call}},
        }
        out.append(Frame(orjson.dumps(request), "c2s", ts=ts))
        if left and call % every == 0:
            left -= 1  # this request is never answered
            continue
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": call}}
        out.append(Frame(orjson.dumps(progress), "s2c", ts=ts + 0.0001))
        if call % 50 == 0:
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": call},
            }
            out.append(Frame(orjson.dumps(log), "s2c", ts=ts + 0.0002))
        if call % 100 == 0:
            ask = {
                "jsonrpc": "2.0",
                "id": call,
                "method": "sampling/createMessage",
                "params": {"maxTokens": 5},
            }
            answer = {"jsonrpc": "2.0", "id": call, "result": {"role": "assistant"}}
            out.append(Frame(orjson.dumps(ask), "s2c", ts=ts + 0.0003))
            out.append(Frame(orjson.dumps(answer), "c2s", ts=ts + 0.0004))
        result = {"jsonrpc": "2.0", "id": call, "result": {"content": [{"type": "text", "text": f"r{call}"}]}}
        out.append(Frame(orjson.dumps(result), "s2c", ts=ts + 0.0005))
    return out[:count]


def with_http_meta(frames: list[Frame]) -> None:
    """Give each frame the metadata the gateway records for a streamable HTTP session."""
    headers_c2s = {
        "Content-Type": "application/json",
        "mcp-session-id": "s-1",
        "mcp-protocol-version": "2025-11-25",
    }
    headers_s2c = {"Content-Type": "text/event-stream", "mcp-session-id": "s-1"}
    for n, frame in enumerate(frames):
        meta: dict[str, object] = {"http_method": "POST", "path": "/servers/bench/mcp", "stream": "post"}
        if frame.direction == "c2s":
            meta["headers"] = headers_c2s
        else:
            meta.update(status=200, headers=headers_s2c, event_id=f"e-{n}")
        frame.meta = meta


def record(db: str, frames: list[Frame]) -> None:
    with open_store(db) as store:
        writer = store.writer()
        session_id = writer.create_session(mode="record", name="bench-views")
        for seq, frame in enumerate(frames, 1):
            writer.add_frame(session_id, seq, frame)
            if writer.over_limit:
                writer.wait_below_limit()
        if not writer.close() or writer.errors:
            sys.exit(f"the writer lost frames: {writer.errors}")


def timed(conn: object, sql: str, repeat: int = 3) -> tuple[float, list[tuple[object, ...]]]:
    """The best of ``repeat`` runs of ``sql`` (the first also warms the cache)."""
    best = float("inf")
    rows: list[tuple[object, ...]] = []
    for _ in range(repeat):
        start = time.perf_counter()
        rows = [tuple(row) for row in conn.exec_driver_sql(sql).all()]  # type: ignore[attr-defined]
        best = min(best, time.perf_counter() - start)
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000, help="frames in the session (default 200,000)")
    parser.add_argument(
        "--unanswered", type=int, default=1000, help="requests never answered (default 1,000)"
    )
    parser.add_argument(
        "--db", metavar="URL", help="a server database URL instead of a temporary SQLite file"
    )
    parser.add_argument("--http", action="store_true", help="frames carry the gateway's HTTP metadata")
    args = parser.parse_args()
    frames = session_frames(args.frames, args.unanswered, time.time())
    if args.http:
        with_http_meta(frames)
    with tempfile.TemporaryDirectory(prefix="mcptape-bench-") as tmp:
        db = args.db or str(Path(tmp) / "views.db")
        start = time.perf_counter()
        record(db, frames)
        print(f"recorded {len(frames):,} frames in {time.perf_counter() - start:.1f} s; database: {db}")
        with open_store(db) as store, store.readonly_connection(600) as conn:
            base_s, _ = timed(conn, BASELINE)
            print(f"baseline, a full scan of frames ({BASELINE}): {base_s * 1000:.0f} ms")
            worst = 0.0
            for name, sql in QUERIES.items():
                seconds, rows = timed(conn, sql)
                ratio = seconds / base_s
                worst = max(worst, ratio)
                shown = rows[0] if len(rows) == 1 else f"{len(rows)} rows"
                print(f"  {name:<28} {seconds * 1000:>8.0f} ms  ratio {ratio:5.2f}  {shown}")
    print(f"worst ratio: {worst:.2f} (target <= 5)")
    print("target met" if worst <= 5 else "target NOT met")


if __name__ == "__main__":
    main()
