"""Pairing replies with requests as frames are written (pure: plain values, no database)."""

from __future__ import annotations

import orjson
import pytest

from mcptape.store import correlation
from mcptape.store.correlation import Correlator, id_key, pair_stored
from mcptape.wire.frame import Frame


def see(correlator: Correlator, seq: int, text: str, direction: str = "c2s", *, replaces: int | None = None):  # type: ignore[no-untyped-def]
    frame = Frame(text.encode(), direction)  # type: ignore[arg-type]
    return correlator.see(
        "s", seq, direction, frame.kind, frame.method, frame.rpc_id, frame.message, replaces
    )


def test_ids_compare_as_peers_compare_them() -> None:
    assert id_key("1") == id_key("1.0") == id_key("1e0") == id_key("10e-1")
    assert id_key("0") == id_key("-0") == id_key("0.0")
    assert id_key('"1"') != id_key("1")
    assert id_key("18446744073709551616") != id_key("18446744073709551617")  # 2**64 and 2**64 + 1
    assert id_key("null") == "null" and id_key('"a"') == '"a"'


def test_a_response_gets_its_requests_method_and_seq() -> None:
    c = Correlator()
    assert see(c, 1, '{"jsonrpc":"2.0","id":1,"method":"tools/call"}').request_seq is None
    pairing = see(c, 2, '{"jsonrpc":"2.0","id":1.0,"result":{}}', "s2c")
    assert (pairing.method, pairing.request_seq) == ("tools/call", 1)


def test_string_and_number_ids_and_the_two_directions_stay_apart() -> None:
    c = Correlator()
    see(c, 1, '{"jsonrpc":"2.0","id":1,"method":"a"}')
    see(c, 2, '{"jsonrpc":"2.0","id":"1","method":"b"}')
    see(c, 3, '{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}', "s2c")
    assert see(c, 4, '{"jsonrpc":"2.0","id":"1","result":{}}', "s2c").request_seq == 2
    assert see(c, 5, '{"jsonrpc":"2.0","id":1,"result":{}}', "c2s").request_seq == 3
    assert see(c, 6, '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}', "s2c").method == "a"


def test_requests_waiting_under_one_id_are_answered_in_order_and_a_second_answer_pairs_nothing() -> None:
    c = Correlator()
    see(c, 1, '{"jsonrpc":"2.0","id":7,"method":"a"}')
    see(c, 2, '{"jsonrpc":"2.0","id":7,"method":"b"}')
    assert see(c, 3, '{"jsonrpc":"2.0","id":7,"result":{}}', "s2c").request_seq == 1
    assert see(c, 4, '{"jsonrpc":"2.0","id":7,"result":{}}', "s2c").request_seq == 2
    assert see(c, 5, '{"jsonrpc":"2.0","id":7,"result":{}}', "s2c").request_seq is None


def test_a_replacement_request_takes_the_place_of_the_one_it_replaces() -> None:
    c = Correlator()
    see(c, 1, '{"jsonrpc":"2.0","id":3,"method":"a"}')
    see(c, 2, '{"jsonrpc":"2.0","id":3,"method":"a","params":{}}', replaces=1)
    assert see(c, 3, '{"jsonrpc":"2.0","id":3,"result":{}}', "s2c").request_seq == 2


def test_batch_elements_pair_in_batch_replies() -> None:
    c = Correlator()
    see(
        c,
        1,
        '[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]',
    )
    see(c, 2, '{"jsonrpc":"2.0","id":5,"method":"c"}')
    single = see(c, 3, '{"jsonrpc":"2.0","id":2,"result":{}}', "s2c")
    assert (single.method, single.request_seq, single.batch_pairs) == ("b", 1, [(1, 2, 3, -1)])
    batch = see(
        c,
        4,
        '[{"jsonrpc":"2.0","id":5,"result":{}},{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}]',
        "s2c",
    )
    assert batch.request_seq is None and batch.batch_pairs == [(2, -1, 4, 0), (1, 0, 4, 1)]


def test_unanswered_requests_are_bounded_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(correlation, "MAX_WAITING", 3)
    c = Correlator()
    for seq in range(1, 6):
        see(c, seq, orjson.dumps({"jsonrpc": "2.0", "id": seq, "method": "m"}).decode())
    assert see(c, 6, '{"jsonrpc":"2.0","id":1,"result":{}}', "s2c").request_seq is None  # forgotten
    assert see(c, 7, '{"jsonrpc":"2.0","id":5,"result":{}}', "s2c").request_seq == 5
    c.forget("s")
    assert see(c, 8, '{"jsonrpc":"2.0","id":4,"result":{}}', "s2c").request_seq is None


def test_stored_rows_pair_as_the_writer_pairs_them() -> None:
    rows = [
        (10, "a", 1, "c2s", "request", "ping", "1", None),
        (11, "b", 1, "c2s", "request", "tools/list", "1", None),
        (12, "a", 2, "s2c", "response", None, "1.0", None),
        (13, "b", 2, "s2c", "batch", None, None, [{"jsonrpc": "2.0", "id": 1, "result": {}}]),
    ]
    replies, pairs = pair_stored(sorted(rows, key=lambda row: (row[1], row[2])))
    assert [(r.frame_id, r.method, r.request_seq) for r in replies] == [(12, "ping", 1)]
    assert pairs == [("b", 1, -1, 2, 0)]


@pytest.mark.parametrize(
    "text",
    [
        "1",
        "0",
        "007",
        "-1",
        "1.0",
        "1e0",
        "100",
        "1" * 64,
        "1" * 65,
        "1" + "0" * 70,
        '"a"',
        '"a\\u0041"',
        '"',
        '"x" ',
        "true",
    ],
)
def test_the_fast_key_is_id_key(text: str) -> None:
    assert correlation._key(text) == id_key(text)
