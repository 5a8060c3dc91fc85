from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from mcptape.wire.frame import Frame, classify, classify_batch, encode_id, id_key
from mcptape.wire.handshake import client_hello, server_hello
from mcptape.wire.jsonrpc import error_response
from tests.helpers.db import query
from tests.helpers.paths import CORPUS, ROOT
from tests.helpers.recording import RAW_ECHO, Recording, frame_bytes


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


def test_frame_with_invalid_utf8_is_classified_on_a_lossy_decode_and_keeps_its_bytes() -> None:
    data = b'{"jsonrpc":"2.0","id":"r\xff1","method":"tools/call","params":{"s":"\xff\xfe"}}'
    f = Frame(data, "c2s")
    assert f.data == data
    assert (f.kind, f.method, f.rpc_id) == ("request", "tools/call", '"r\ufffd1"')
    assert f.message["params"]["s"] == "\ufffd\ufffd"
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


def test_the_corpus_lives_in_the_repository_and_nothing_reads_shared() -> None:
    assert CORPUS.is_relative_to(ROOT) and (CORPUS / "README.md").is_file()
    offenders = []
    for top in ("mcptape", "tests", "bench", "scripts"):
        for path in (ROOT / top).rglob("*"):
            if "node_modules" in path.parts or path.suffix not in (".py", ".toml", ".cfg", ".sh", ""):
                continue
            if path.is_file() and path != Path(__file__):
                text = path.read_text(errors="replace")
                if "../shared" in text or "/work/shared" in text or '"shared" / "corpus"' in text:
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def _deep(depth: int, opener: str = "[") -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    inner = (('{"a":' * depth) + "0" + ("}" * depth)) if opener == "{" else ("[" * depth + "]" * depth)
    assert closer
    return b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"x":' + inner.encode() + b"}}"


@pytest.mark.parametrize("opener", ["[", "{"])
def test_nesting_deeper_than_the_parsers_go_is_classified_by_the_top_level_and_never_raises(
    opener: str,
) -> None:
    data = _deep(1100, opener)
    c, msg = classify(data)
    assert (c.kind, c.method, c.rpc_id, msg) == ("request", "tools/call", "9", None)
    f = Frame(data, "s2c")
    assert (f.kind, f.method, f.rpc_id, f.message) == ("request", "tools/call", "9", None)
    assert classify_batch(b"[" + data + b"]") == []


@pytest.mark.parametrize("opener", ["[", "{"])
def test_nesting_past_the_scanners_bracket_budget_is_malformed_and_never_raises(opener: str) -> None:
    data = _deep(200_000, opener)
    c, msg = classify(data)
    assert (c.kind, msg) == ("malformed", None)
    f = Frame(data, "s2c")
    assert (f.kind, f.method, f.rpc_id, f.message) == ("malformed", None, None, None)
    assert classify_batch(b"[" + data + b"]") == []


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":NaN}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":-Infinity}',
        b'{"jsonrpc":"2.0","id":1,"method":"m"',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"9" * 5000 + b"}",
        b"\x00\x01\x02",
        b"\xff" * 10,
        b"",
        b'{"jsonrpc":"2.0","id":' + b"[" * 1100 + b"]" * 1100 + b',"method":"m"}',
    ],
)
def test_any_line_that_cannot_be_parsed_is_malformed(line: bytes) -> None:
    c, _ = classify(line)
    assert c.kind == "malformed"
    assert Frame(line, "c2s").kind == "malformed"


ID_TEXTS = [
    "18446744073709551616",
    "18446744073709551617",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1.0",
    "1e0",
    "1E+2",
    "-0",
    "0",
    "0.5",
    '"\\u00e9t\\u00e9"',
    '"a\\/b"',
    '"plain"',
    '"\\ud800"',
    "7",
]


@pytest.mark.parametrize("id_text", ID_TEXTS)
def test_ids_keep_their_exact_wire_text(id_text: str) -> None:
    # A backslash elsewhere in the frame, and the id after a large member, as the
    # TypeScript SDK writes responses.
    request = f'{{"jsonrpc":"2.0","id":{id_text},"method":"m","params":{{"t":"a\\nb"}}}}'.encode()
    response = f'{{"result":{{"t":"x\\"y","id":5}},"jsonrpc":"2.0","id" : {id_text} }}'.encode()
    assert classify(request)[0].rpc_id == id_text
    assert classify(response)[0].rpc_id == id_text
    assert Frame(request, "c2s").rpc_id == id_text


def test_the_last_id_member_wins_and_an_escaped_key_counts() -> None:
    c, _ = classify(b'{"jsonrpc":"2.0","id":1,"method":"m","\\u0069d":18446744073709551616.0}')
    assert c.rpc_id == "18446744073709551616.0"
    c, _ = classify(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"id":2.0},"id":3.0}')
    assert c.rpc_id == "3.0"


def test_an_object_id_loses_only_its_whitespace() -> None:
    c, _ = classify(b'{"jsonrpc":"2.0","id":{ "a" : [1.0, "x y"] },"method":"m"}')
    assert (c.kind, c.rpc_id) == ("request", '{"a":[1.0,"x y"]}')


@pytest.mark.parametrize("id_text", ID_TEXTS)
def test_an_error_response_carries_the_request_id_text_unchanged(id_text: str) -> None:
    c, _ = classify(f'{{"jsonrpc":"2.0","id":{id_text},"method":"m"}}'.encode())
    assert c.rpc_id is not None
    out = error_response(c.rpc_id, -32000, "the server exited", {"exitCode": 3})
    assert out.startswith(b'{"jsonrpc":"2.0","id":' + id_text.encode() + b',"error":')
    back, _ = classify(out)
    assert (back.kind, back.rpc_id) == ("error", id_text)
    assert json.loads(out)["error"] == {
        "code": -32000,
        "message": "the server exited",
        "data": {"exitCode": 3},
    }


def test_batch_elements_are_classified_with_exact_ids() -> None:
    data = (
        b'[{"jsonrpc":"2.0","id":18446744073709551617,"method":"a","params":{"s":"\\n"}},'
        b' {"jsonrpc":"2.0","method":"b"}, 5, {"jsonrpc":"2.0","id":"\\u0041","result":{}}]'
    )
    got = [(c.kind, c.method, c.rpc_id) for c in classify_batch(data)]
    assert got == [
        ("request", "a", "18446744073709551617"),
        ("notification", "b", None),
        ("malformed", None, None),
        ("response", None, '"\\u0041"'),
    ]
    assert classify_batch(b'{"jsonrpc":"2.0","id":1,"method":"a"}') == []


@pytest.mark.parametrize(
    "same",
    [
        ["1", "1.0", "1e0", "10e-1", "1E+0", "0.1e1", " 1 "],
        ["0", "-0", "0.0", "0e10", "-0.0e-3"],
        ["100", "1e2", "1E+2", "100.000"],
        ["1.5", "15e-1", "1.50"],
        ['"é"', '"\\u00e9"', '"\\u00E9"'],
        ['"a/b"', '"a\\/b"'],
        ["null"],
    ],
)
def test_id_key_is_equal_for_ids_peers_take_as_equal(same: list[str]) -> None:
    assert len({id_key(text) for text in same}) == 1


def test_id_key_keeps_apart_what_peers_keep_apart() -> None:
    texts = [
        "1",
        '"1"',
        "18446744073709551616",
        "18446744073709551617",
        "-1",
        "1.5",
        "null",
        '"null"',
        "true",
    ]
    assert len({id_key(t) for t in texts}) == len(texts)


def test_id_key_is_the_id_text_for_common_ids_and_short_for_huge_exponents() -> None:
    for text in ("7", "0", "-12", '"abc"', '"7f3a-11"', "null", "18446744073709551617"):
        assert id_key(text) == text
    assert id_key("1.0") == "1" and id_key("0.001") == "0.001"
    assert len(id_key("1e999999999")) < 20
    assert id_key("1e999999999") != id_key("1e999999998")


@pytest.mark.parametrize("junk", ["", "nonsense", "1e", "-", '"unterminated', "{", "NaN", "--1"])
def test_id_key_never_raises(junk: str) -> None:
    assert isinstance(id_key(junk), str)


@pytest.mark.slow
def test_a_deeply_nested_line_is_forwarded_and_recorded_as_malformed_and_the_session_goes_on(
    db_path: Path,
) -> None:
    deep = _deep(100_000)
    after = b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}'
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.send(deep + b"\n")
        assert rec.recv() == deep + b"\n"
        rec.send(after + b"\n")
        assert rec.recv() == after + b"\n"
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    rows = query(db_path, "select direction, kind, method, rpc_id, text, raw from frames order by seq")
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("c2s", "malformed", None, None),
        ("s2c", "malformed", None, None),
        ("c2s", "request", "ping", "18446744073709551617"),
        ("s2c", "request", "ping", "18446744073709551617"),
    ]
    assert [frame_bytes(r[4], r[5]) for r in rows] == [deep, deep, after, after]


@pytest.mark.parametrize(
    ("line", "id_text"),
    [
        (b'{"jsonrpc":"2.0","result":{},"note":"x\\",\\"id\\":\\"a","id":"\\u0061"}', '"\\u0061"'),
        (b'{"jsonrpc":"2.0","id":"\\u0061","result":{"id":"a"},"note":",\\"id\\":\\"a\\"}"}', '"\\u0061"'),
        (b'{"id":"a","jsonrpc":"2.0","result":{},"id":"\\u0062"}', '"\\u0062"'),
        (b'{"method":"m","id":1E400,"params":{"s":"\\n"}}', "1E400"),
    ],
)
def test_ids_are_found_where_strings_only_pretend_to_hold_them(line: bytes, id_text: str) -> None:
    assert classify(line)[0].rpc_id == id_text


@pytest.mark.slow
def test_requests_left_pending_by_a_dead_server_get_errors_with_their_exact_ids(db_path: Path) -> None:
    ids = [b"18446744073709551616", b"18446744073709551617"]
    rec = Recording(db_path, [*RAW_ECHO, "--crash-on", "crash-now"])
    try:
        for rpc_id in ids:  # raw_echo echoes a request as a request: it stays pending
            line = b'{"jsonrpc":"2.0","id":' + rpc_id + b',"method":"tools/list"}\n'
            rec.send(line)
            assert rec.recv() == line
        rec.send(b'{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"crash-now"}}\n')
        answers = [rec.recv() for _ in range(3)]
        assert rec.recv() is None
        rec.wait()
    finally:
        rec.kill()
    got = sorted(classify((a or b"").rstrip(b"\n"))[0].rpc_id or "" for a in answers)
    assert got == ["1.0", *sorted(i.decode() for i in ids)]
    assert all(b'"error":' in (a or b"") for a in answers)


@pytest.mark.slow
def test_requests_of_a_batch_left_pending_get_one_batch_answer_with_their_exact_ids(db_path: Path) -> None:
    batch = (
        b'[{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/list"},'
        b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/list"}]\n'
    )
    rec = Recording(db_path, [*RAW_ECHO, "--crash-on", "crash-now"])
    try:
        rec.send(batch)
        assert rec.recv() == batch
        rec.send(b'{"jsonrpc":"2.0","method":"crash-now"}\n')
        answers = []
        while (line := rec.recv()) is not None:
            answers.append(line)
        rec.wait()
    finally:
        rec.kill()
    assert len(answers) == 1
    assert [(c.kind, c.rpc_id) for c in classify_batch(answers[0].rstrip(b"\n"))] == [
        ("error", "18446744073709551616"),
        ("error", "18446744073709551617"),
    ]
