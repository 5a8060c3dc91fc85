"""Large frames are classified from their top level, never built, exactly as a full parse would."""

from __future__ import annotations

import pytest

from mcptape.wire.frame import KEEP_PARSED_BYTES, Frame, classify, classify_large
from mcptape.wire.scan import MAX_BRACKETS, Member, TooComplex, scan_members

PAD = "p" * 64  # replaced by a large string to make a frame large

SAME_AS_A_FULL_PARSE = [
    '{"jsonrpc":"2.0","id":1,"result":{"blob":"PAD"}}',
    '{"result":{"content":[{"type":"text","text":"PAD"}]},"jsonrpc":"2.0","id":7}',  # TypeScript order
    '{"jsonrpc":"2.0","id":"a\\"b","method":"tools/call","params":{"x":"PAD"}}',
    '{"jsonrpc":"2.0","id":18446744073709551617,"method":"m","params":["PAD",{"a":[1,2,{"b":"]}"}]}]}',
    '{"jsonrpc":"2.0","id":1.0,"error":{"code":-32000,"message":"PAD"}}',
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"PAD"}}',
    '{"jsonrpc":"2.0","id":1,"method":{"not":"a string"},"params":"PAD"}',
    '{"jsonrpc":"2.0","params":"PAD"}',
    '{"id":1,"result":"PAD","id":2}',  # duplicate keys: the last wins
    '{"\\u0069d":3,"result":"PAD"}',  # an escaped key
    ' \t{ "id" : 4 , "method" : "m\\u00e9" , "params" : { "x" : "PAD" } } \r\n',
    '{"jsonrpc":"2.0","id":{"a": [1, 2]},"result":"PAD"}',  # an object id keeps its text, compacted
    '{"jsonrpc":"2.0","id":null,"error":{"message":"PAD"}}',
    '{"jsonrpc":"2.0","id":1,"result":"PAD"} trailing',
    '{"jsonrpc":"2.0","id":1,"result":"PAD"',
    '{"jsonrpc":"2.0","id":1,"result":{"blob":"PAD"}',
    '{"jsonrpc":"2.0","id":1,"result":"PAD}',
    '"PAD"',
    "not json PAD",
    "{}",
    '{"jsonrpc":"2.0","id":1,"result":"PAD",}',
]


def large(text: str) -> bytes:
    return text.replace("PAD", "x" * (KEEP_PARSED_BYTES + 10)).encode()


@pytest.mark.parametrize("text", SAME_AS_A_FULL_PARSE)
def test_the_scan_classifies_as_a_full_parse_does(text: str) -> None:
    data = large(text)
    found = classify_large(data)
    assert found == classify(data)[0]
    assert Frame(data, "s2c").kind == classify(data)[0].kind


def test_an_array_and_a_too_intricate_object_are_left_to_the_parser() -> None:
    assert classify_large(large('[{"jsonrpc":"2.0","id":1,"method":"a","params":"PAD"}]')) is None
    intricate = large('{"pad":"PAD","id":1,"result":[').replace(b"[", b"[" + b"[]," * MAX_BRACKETS) + b"[]]}"
    with pytest.raises(TooComplex):
        scan_members(intricate)
    assert classify_large(intricate) is None
    assert Frame(intricate, "s2c").kind == "response"  # parsed instead


def test_members_are_found_with_their_value_spans_and_brackets_in_strings_ignored() -> None:
    data = b'{"a":"}{][","b":{"c":["x]"]},"d":-1.5e3,"e":true}'
    members = scan_members(data)
    assert members is not None
    assert [(m.key, data[m.start : m.end]) for m in members] == [
        (b'"a"', b'"}{]["'),
        (b'"b"', b'{"c":["x]"]}'),
        (b'"d"', b"-1.5e3"),
        (b'"e"', b"true"),
    ]
    assert scan_members(b" {} ") == []
    assert scan_members(b"[1]") is None
    assert scan_members(b'{"a":1 "b":2}') is None
    assert isinstance(Member(b'"a"', 0, 1), tuple)


def test_a_large_frame_is_classified_without_keeping_or_building_its_value() -> None:
    frame = Frame(large('{"jsonrpc":"2.0","id":9,"result":{"blob":"PAD"}}'), "s2c")
    assert (frame.kind, frame.rpc_id) == ("response", "9")
    assert frame.message["result"]["blob"].startswith("xxx")  # built on demand only
