from __future__ import annotations

import json

import orjson
import pytest

from mcptape.frames import Frame, classify, encode_id, error_response
from mcptape.proxy.handshake import client_hello, server_hello
from tests.conftest import CORPUS


@pytest.mark.parametrize(
    ("line", "kind", "method", "rpc_id"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', "request", "tools/list", "1"),
        (b'{"jsonrpc":"2.0","id":"1","method":"ping"}', "request", "ping", '"1"'),
        (
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            "notification",
            "notifications/initialized",
            None,
        ),
        (b'{"jsonrpc":"2.0","id":7,"result":{}}', "response", None, "7"),
        (b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"x"}}', "error", None, "7"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]', "batch", None, None),
        (b"not json at all", "malformed", None, None),
        (b"[]", "malformed", None, None),
        (b'"a string"', "malformed", None, None),
        (b'{"jsonrpc":"2.0","id":3}', "malformed", None, "3"),
        (b'{"jsonrpc":"2.0","id":true,"method":"odd"}', "request", "odd", "true"),
        (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            "error",
            None,
            "null",
        ),
    ],
)
def test_classification(line: bytes, kind: str, method: str | None, rpc_id: str | None) -> None:
    c, _ = classify(line)
    assert (c.kind, c.method, c.rpc_id) == (kind, method, rpc_id)


def test_numeric_and_string_ids_stay_distinct() -> None:
    assert encode_id(1) != encode_id("1")


def test_frame_keeps_exact_bytes_including_invalid_utf8() -> None:
    data = b'{"jsonrpc":"2.0","method":"x","params":{"s":"\xff"}}'
    f = Frame(data, "c2s")
    assert f.data == data
    assert f.kind == "malformed"  # orjson rejects invalid UTF-8
    assert f.origin == "client"
    assert "\ufffd" in f.text()


def test_error_response_echoes_the_id_as_it_was() -> None:
    out = orjson.loads(error_response('"abc"', -32000, "gone", {"exitCode": 1}))
    assert out == {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": -32000, "message": "gone", "data": {"exitCode": 1}},
    }


def _corpus(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line.strip()]


def test_every_corpus_frame_classifies_as_a_jsonrpc_message() -> None:
    for name in ("everything-ts-client.jsonl", "everything-py-client.jsonl", "py2026-client-server.jsonl"):
        for row in _corpus(name):
            c, _ = classify(row["frame"].encode())
            assert c.kind != "malformed", (name, row["frame"][:80])


def test_handshake_from_initialize_exchange() -> None:
    rows = _corpus("everything-ts-client.jsonl")
    init = orjson.loads(rows[0]["frame"])
    result = orjson.loads(rows[1]["frame"])
    c = client_hello(init)
    s = server_hello(result, "initialize")
    assert c["client_name"] == "acceptance" and c["protocol_version"] == "2025-11-25"
    assert json.loads(c["client_capabilities"])["sampling"] == {}
    assert s["server_name"] == "mcp-servers/everything" and s["server_version"] == "2.0.0"
    assert "tools" in json.loads(s["server_capabilities"])


def test_handshake_from_2026_meta_without_initialize() -> None:
    rows = _corpus("py2026-client-server.jsonl")
    discover = orjson.loads(rows[0]["frame"])
    result = orjson.loads(rows[1]["frame"])
    c = client_hello(discover)
    s = server_hello(result, "server/discover")
    assert c["protocol_version"] == "2026-07-28" and c["client_name"] == "mcp"
    assert s["server_name"] == "py-2026"
    assert "tools" in json.loads(s["server_capabilities"])


def test_valid_json_that_orjson_refuses_is_still_classified() -> None:
    c, msg = classify(b'{"jsonrpc":"2.0","id":123456789012345678901234,"method":"m","params":{"x":1e400}}')
    assert (c.kind, c.method, c.rpc_id) == ("request", "m", "123456789012345678901234")
    assert msg["params"]["x"] == float("inf")
    out = error_response(c.rpc_id or "", -32000, "gone")
    assert b'"id":123456789012345678901234' in out


def test_a_large_frame_is_classified_and_parsed_again_on_demand() -> None:
    big = b'[{"jsonrpc":"2.0","id":1,"method":"a","params":{"blob":"' + b"z" * (2 << 20) + b'"}}]'
    f = Frame(big, "c2s")
    assert f.kind == "batch"
    assert f.message[0]["method"] == "a"  # not kept after classification, parsed again
    assert Frame(b"not json" * 200_000, "s2c").message is None
