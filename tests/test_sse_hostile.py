"""SSE from a hostile or merely large peer: any chunking parses alike, a long event is not
searched again for each chunk, and an event that never ends is refused at a bound."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from mcptape.proxy.http import sse
from mcptape.proxy.http.sse import SseParser
from mcptape.proxy.http.upstream_http import HttpClientLink
from mcptape.wire.frame import Frame
from tests.helpers.upstreams import serving

STREAM = (
    b': comment\r\nid: a1\r\nevent: message\r\ndata: {"x":1}\r\n\r\n'
    b"data: line one\rdata: line two\r\rid: a2\ndata: " + b"y" * 300 + b"\n\n"
    b"retry: 50\nid: a3\n\n"
)


def _parse(chunks: list[bytes]) -> list[sse.SseEvent]:
    parser = SseParser()
    return [event for chunk in chunks for event in parser.feed(chunk)]


def test_every_chunking_of_a_stream_gives_the_same_events() -> None:
    whole = _parse([STREAM])
    assert [e.data for e in whole] == [b'{"x":1}', b"line one\nline two", b"y" * 300, b""]
    assert [e.id for e in whole] == ["a1", None, "a2", "a3"]
    for size in range(1, 40):
        assert _parse([STREAM[i : i + size] for i in range(0, len(STREAM), size)]) == whole, size


def test_a_line_that_never_ends_is_refused_once_past_the_bound() -> None:
    parser = SseParser(max_event_bytes=10_000)
    parser.feed(b"data: ")
    fed = 0
    with pytest.raises(ValueError, match="larger than 10000 bytes"):
        while fed < 1_000_000:
            parser.feed(b"z" * 1000)
            fed += 1000
    assert fed <= 11_000  # refused soon after the bound, not after everything was held
    # Many lines of one event count together.
    lines = SseParser(max_event_bytes=10_000)
    with pytest.raises(ValueError):
        for _ in range(100):
            lines.feed(b"data: " + b"z" * 500 + b"\n")
    assert SseParser(max_event_bytes=None).feed(b"data: " + b"z" * 20_000 + b"\n\n")[0].data == b"z" * 20_000


async def _endless(request: web.Request) -> web.StreamResponse:
    """10 MB on one SSE line or in one JSON body, never ended."""
    sse_kind = request.query.get("kind") == "sse"
    ctype = "text/event-stream" if sse_kind else "application/json"
    response = web.StreamResponse(headers={"Content-Type": ctype, "Mcp-Session-Id": "s1"})
    await response.prepare(request)
    await response.write(b"data: " if sse_kind else b'{"jsonrpc":"2.0","id":1,"result":{"t":"')
    for _ in range(10_000):
        await response.write(b"q" * 1000)
    return response


def _run_link(kind: str) -> tuple[list[Frame], list[tuple[str, Any]]]:
    async def main() -> tuple[list[Frame], list[tuple[str, Any]]]:
        app = web.Application()
        app.router.add_post("/mcp", _endless)
        async with serving(app, "") as base:
            got: list[Frame] = []
            events: list[tuple[str, Any]] = []
            link = HttpClientLink(f"{base}/mcp?kind={kind}")
            link.start(got.append, lambda why: None, lambda k, t, d: events.append((k, t)))
            link.send(Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
            for _ in range(500):
                if got or any(k == "http_stream_dropped" for k, _ in events):
                    break
                await asyncio.sleep(0.02)
            await link.aclose(0.5)
        return got, events

    return asyncio.run(main())


def test_an_upstream_event_past_the_bound_drops_the_stream_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 64_000)
    got, events = _run_link("sse")
    # The request the stream was to answer gets an error rather than hanging.
    assert [json.loads(f.data)["id"] for f in got] == [1] and got[0].kind == "error"
    assert "(an SSE event is larger than 64000 bytes)" in json.loads(got[0].data)["error"]["message"]
    dropped = [text for kind, text in events if kind == "http_stream_dropped"]
    assert dropped and "larger than 64000 bytes" in dropped[0]


def test_an_upstream_json_body_past_the_bound_is_an_error_answer_not_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 64_000)
    got, _ = _run_link("json")
    assert len(got) == 1
    error = json.loads(got[0].data)["error"]
    assert json.loads(got[0].data)["id"] == 1 and "larger than 64000 bytes" in error["message"]
