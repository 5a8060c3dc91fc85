"""`--redact /json/path`: values at JSON Pointers (``*`` for any key or index) in recorded messages."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest
from mcp import Client
from mcp.types import Implementation

from mcptape.redact import PLACEHOLDER, Unreadable, parse_json_path, placeholder, redact_json_paths
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http
from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

P = placeholder


def paths(*texts: str) -> list[tuple[str, ...]]:
    return [parse_json_path(t) for t in texts]


def test_json_paths_parse_as_json_pointers_with_escapes() -> None:
    assert parse_json_path("/params/arguments/password") == ("params", "arguments", "password")
    assert parse_json_path("/a~1b/c~0d/*") == ("a/b", "c~d", "*")
    for bad in ("params/x", "", "/a~2", "/a~"):
        with pytest.raises(ValueError, match="is not a JSON path"):
            parse_json_path(bad)


def test_the_value_at_a_path_becomes_a_stable_placeholder_and_the_rest_stays() -> None:
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"user":"ada","password":"hunter2"}}}'
    out = redact_json_paths(data, paths("/params/arguments/password"))
    assert out is not None
    message = orjson.loads(out)
    assert message["params"]["arguments"] == {"user": "ada", "password": P("hunter2")}
    assert list(message) == ["jsonrpc", "id", "method", "params"]  # keys keep their order
    assert redact_json_paths(out, paths("/params/arguments/password")) is None  # never twice


def test_wildcards_match_every_key_and_index_and_non_strings_are_hidden_too() -> None:
    data = orjson.dumps(
        {
            "id": 2,
            "result": {
                "content": [{"type": "text", "text": "s1"}, {"type": "text", "text": "s2"}],
                "structuredContent": {"pin": 1234, "card": {"n": "4111"}},
            },
        }
    )
    out = redact_json_paths(data, paths("/result/content/*/text", "/result/structuredContent/*"))
    assert out is not None
    result = orjson.loads(out)["result"]
    assert [c["text"] for c in result["content"]] == [P("s1"), P("s2")]
    assert result["structuredContent"] == {"pin": P("1234"), "card": P('{"n":"4111"}')}


def test_batches_are_redacted_item_by_item_and_no_match_keeps_the_exact_bytes() -> None:
    batch = b'[{"id":1,"params":{"k":"a"}}, {"id":2,"params":{"k":"b"}}]'
    out = redact_json_paths(batch, paths("/params/k"))
    assert out is not None and [m["params"]["k"] for m in orjson.loads(out)] == [P("a"), P("b")]
    assert redact_json_paths(b'{"id":1, "params":{}}', paths("/params/k", "/result/0")) is None
    with pytest.raises(Unreadable):  # fails closed: see test_redact_fails_closed.py
        redact_json_paths(b"not json {", paths("/params/k"))
    # An id beyond 64 bits is kept exactly while the secret goes.
    big = b'{"id":123456789012345678901234567890,"params":{"k":"secret"}}'
    out = redact_json_paths(big, paths("/params/k"))
    assert out is not None and b"123456789012345678901234567890" in out and b"secret" not in out


@pytest.mark.slow
def test_a_bad_redact_value_is_a_one_line_error() -> None:
    for value, fragment in (("/a~2", "is not a JSON path"), ("bad header", "neither a header name")):
        proc = subprocess.run(
            [*MCPTAPE, "proxy", "--no-auth", "--listen", "127.0.0.1:0", "--redact", value],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert_one_line_error(proc, fragment)


@pytest.mark.parametrize("upstream", ["stdio", "http"])
@pytest.mark.slow
def test_the_gateway_records_no_secret_at_a_redacted_path_and_forwards_it_untouched(
    upstream: str, tmp_path: Path
) -> None:
    secret = "correct-horse-battery-staple"
    flags = ["--redact", "/params/arguments/*", "--redact", "/result/content/*/text"]
    flags += ["--redact", "/result/structuredContent/*", "--redact", "/params/clientInfo/version"]
    with contextlib.ExitStack() as stack:
        if upstream == "stdio":
            entry: dict[str, object] = {"command": sys.executable, "args": ["-m", "mcptape.servers.demo"]}
            tool, arguments = "echo", {"text": secret}
        else:  # passed through request for request: the recorded copy is redacted all the same
            entry = {"url": stack.enter_context(everything_http("streamableHttp")), "type": "http"}
            tool, arguments = "echo", {"message": secret}
        g = GatewayProcess(tmp_path / "g.db", {"up": entry}, "--no-auth", *flags, tmp=tmp_path)

        async def main() -> str:
            # A secret where the session's identity is learnt from, too (sessions.client_info).
            me = Implementation(name="redaction-test", version=secret)
            async with Client(g.url("up"), mode="legacy", client_info=me) as client:
                got = await client.call_tool(tool, arguments)
                return json.dumps(got.model_dump())

        try:
            answer = anyio.run(main)
        finally:
            assert g.stop() == 0
    assert secret in answer  # the client got the server's answer as it was
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        dump = json.dumps(
            [con.execute(f"select * from {t}").fetchall() for t in ("sessions", "frames", "events")],
            default=lambda v: v.decode(errors="replace") if isinstance(v, bytes) else str(v),
        )
        (call,) = con.execute(
            "select text from frames where method='tools/call' and direction='c2s'"
        ).fetchone()
    finally:
        con.close()
    assert secret not in dump
    hidden = next(iter(json.loads(call)["params"]["arguments"].values()))
    assert PLACEHOLDER.fullmatch(hidden)  # the placeholder stands in the recorded frame


def test_scrub_hides_secrets_in_derived_text_as_written_and_as_json_escapes() -> None:
    from mcptape.redact import scrub

    info = json.dumps({"name": "c", "version": 'pa"ss'})
    cleaned = scrub(info, ['pa"ss'])
    assert "pa" not in cleaned
    assert placeholder('pa"ss') in cleaned
    assert scrub("nothing here", ["secret", ""]) == "nothing here"
