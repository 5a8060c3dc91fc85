"""Frames that are valid JSON but hard to read: nesting deeper than any parser recurses.

A response nested 10,000 levels deep was taken for a malformed frame: its request stayed
pending, and when the server then exited the client got a second answer for the same id
saying the server had never replied.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcptape.wire.frame import Frame, classify
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE

DEPTH = 10_000
DEEP_RESULT = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"deep":' + b"[" * DEPTH + b"]" * DEPTH + b"}}"
DEEP_NOTE = (
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":'
    + b'{"a":' * DEPTH
    + b"1"
    + b"}" * DEPTH
    + b"}}"
)
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}\n'


def test_a_message_nested_too_deep_to_parse_is_classified_by_its_top_level() -> None:
    found, msg = classify(DEEP_RESULT)
    assert (found.kind, found.rpc_id, msg) == ("response", "1", None)
    found, _ = classify(DEEP_NOTE)
    assert (found.kind, found.method) == ("notification", "notifications/message")


def test_what_is_not_a_deep_object_stays_malformed() -> None:
    assert classify(b"[" * DEPTH + b"]" * DEPTH)[0].kind == "malformed"
    assert classify(b'{"jsonrpc":"2.0","id":1,"result":{"a":NaN}}')[0].kind == "malformed"
    assert classify(b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * DEPTH + b"}")[0].kind == "malformed"


@pytest.mark.slow
def test_a_deep_response_answers_its_request_once_and_is_recorded_as_a_response(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    written = DEEP_NOTE + b"\n" + DEEP_RESULT + b"\n"
    server = (
        "import sys; sys.stdin.buffer.readline(); "
        f"sys.stdout.buffer.write({written!r}); sys.stdout.flush(); sys.exit(3)"
    )
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), "--", sys.executable, "-c", server],
        input=CALL,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    # Byte for byte what the server wrote, and no second answer made up for id 1.
    assert proc.stdout == written
    rows = query(db, "select kind, method, rpc_id, origin from frames where direction = 's2c' order by seq")
    assert rows == [
        ("notification", "notifications/message", None, "server"),
        ("response", "tools/call", "1", "server"),
    ]
    [(tool, is_error)] = query(db, "select tool, is_error from tool_calls")
    assert (tool, is_error) == ("x", 0)
    shown = subprocess.run(
        [*MCPTAPE, "show", "--db", str(db), "last"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("JSON nested too deep to summarise") == 2
    assert "tools/call #1          JSON nested too deep" in shown.stdout
    exported = subprocess.run([*MCPTAPE, "export", "--db", str(db), "last"], capture_output=True, timeout=60)
    lines = [orjson.loads(line) for line in exported.stdout.splitlines()]
    assert [line["frame"].encode() for line in lines[1:]] == [DEEP_NOTE, DEEP_RESULT]


def test_a_request_too_deep_to_parse_posted_to_the_gateway_gets_a_stream_its_answer_takes() -> None:
    # It was answered 202 (no answer will come) and its answer went on the GET stream.
    from mcptape.proxy.http.downstream import HttpSessionLink

    deep = (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":'
        + b'{"a":' * 100_000
        + b"1"
        + b"}" * 100_001
    )
    answer = b'{"jsonrpc":"2.0","id":5,"result":{"content":[]}}'

    async def main() -> bytes:
        link = HttpSessionLink("s", path="/servers/x/mcp")
        link.start(lambda frame: None, lambda why: None, lambda kind, text, data: None)
        stream = await link.post(Frame(deep, "c2s"))
        assert stream is not None
        frame = Frame(answer, "s2c")
        frame.meta = link.prepare(frame)
        link.send(frame)
        body = bytearray()
        await asyncio.wait_for(stream.pump(lambda data: asyncio.sleep(0, body.extend(data))), 5)
        return bytes(body)

    assert asyncio.run(main()) == b"id: p1-1\nevent: message\ndata: " + answer + b"\n\n"
