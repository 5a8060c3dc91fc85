"""Replay's pure parts with plain values: tapes, normalisation, matching, comparison and reports."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mcptape.replay.compare import (
    DIFFERS,
    MATCH,
    MISSING,
    SessionResult,
    compare_tapes,
    format_session,
    report_json,
    report_junit,
    summary_line,
)
from mcptape.replay.matchers import ABSENT, differences, matches, miss_message, nearest, request_key
from mcptape.replay.normalise import IgnoreRuleError, Normaliser, parse_ignore
from mcptape.replay.tape import TapeError, build_tape, read_jsonl, tape_frame


def frames(*items: tuple[str, dict[str, Any]], origin: str | None = None) -> list[Any]:
    out = []
    for seq, (direction, message) in enumerate(items, 1):
        who = origin or ("client" if direction == "c2s" else "server")
        out.append(tape_frame(seq, direction, who, float(seq), json.dumps(message).encode()))  # type: ignore[arg-type]
    return out


def req(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return m


def res(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def note(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


CALL = req(2, "tools/call", {"name": "weather", "arguments": {"city": "Oslo"}, "_meta": {"progressToken": 7}})


def weather_tape(humidity: int, log: str = "working") -> Any:
    return build_tape(
        frames(
            ("c2s", req(1, "initialize", {"protocolVersion": "2025-11-25"})),
            ("s2c", res(1, {"serverInfo": {"name": "s"}})),
            ("c2s", note("notifications/initialized", {})),
            ("c2s", CALL),
            ("s2c", note("notifications/message", {"level": "info", "data": log})),
            ("s2c", req(0, "sampling/createMessage", {"messages": []})),
            ("c2s", res(0, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})),
            ("s2c", note("notifications/progress", {"progressToken": 7, "progress": 1})),
            ("s2c", res(2, {"structuredContent": {"city": "Oslo", "humidity": humidity}})),
        ),
        "test",
    )


def test_tape_groups_frames_into_exchanges_with_notifications_and_server_calls() -> None:
    tape = weather_tape(50)
    assert [e.label() for e in tape.exchanges] == ["#1 initialize", "#2 tools/call weather"]
    call = tape.exchanges[1]
    assert [n["method"] for n in call.notifications] == ["notifications/message", "notifications/progress"]
    assert [c.method for c in call.server_calls] == ["sampling/createMessage"]
    assert call.server_calls[0].answer is not None and call.server_calls[0].answer["result"]["model"] == "m"
    # Steps: what the client sent, each waiting for the responses recorded before it.
    assert [s.frame.seq for s in tape.steps] == [1, 3, 4]
    assert [s.wait_for for s in tape.steps] == [(), ("1",), ()]


def test_what_the_server_sends_after_a_cancellation_is_not_the_cancelled_requests() -> None:
    slow = req(2, "tools/call", {"name": "slow"})
    tape = build_tape(
        frames(
            ("c2s", req(1, "tools/list")),
            ("c2s", slow),
            ("c2s", note("notifications/cancelled", {"requestId": 2, "reason": "user"})),
            ("s2c", note("notifications/message", {"level": "info", "data": "listing"})),
            ("s2c", res(1, {"tools": []})),
        ),
        "t",
    )
    listing, cancelled = tape.exchanges
    assert [n["params"]["data"] for n in listing.notifications] == ["listing"]
    assert cancelled.notifications == [] and cancelled.response is None


def test_proxy_frames_are_not_steps_but_their_answers_count() -> None:
    tape = build_tape(
        [
            *frames(("c2s", CALL), ("s2c", req(0, "roots/list"))),
            *frames(("c2s", res(0, {"roots": []})), origin="proxy"),
            *frames(("s2c", res(2, {"content": []}))),
        ],
        "t",
    )
    assert len(tape.steps) == 1
    assert tape.server_calls[0].answer == res(0, {"roots": []})


def test_read_jsonl_reads_an_export_and_rejects_other_lines(tmp_path: Path) -> None:
    good = tmp_path / "s.jsonl"
    lines = [
        {"dir": "c2s", "t": 0.0, "frame": json.dumps(CALL)},
        {"dir": "s2c", "t": 0.1, "frame": "not json"},
    ]
    good.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    tape = read_jsonl(good)
    assert tape.exchanges[0].subject == "weather" and tape.frames[1].kind == "malformed"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dir": "up", "frame": "{}"}\n')
    with pytest.raises(TapeError, match=r"bad.jsonl:1: not a line of `mcptape export`"):
        read_jsonl(bad)
    with pytest.raises(TapeError, match="does not exist"):
        read_jsonl(tmp_path / "missing.jsonl")


def test_default_normalisation_removes_meta_minted_ids_and_timestamps() -> None:
    n = Normaliser()
    value = {
        "_meta": {"x": 1},
        "requestState": "abc",
        "text": "at 2026-11-26T05:00:01.5Z id 123e4567-e89b-12d3-a456-426614174000",
        "createdAt": 17,
        "nested": [{"_meta": 1, "v": 2}],
    }
    assert n.normalise(value) == {
        "requestState": "<minted>",
        "text": "at <timestamp> id <uuid>",
        "createdAt": "<timestamp>",
        "nested": [{"v": 2}],
    }


def test_each_default_can_be_kept() -> None:
    n = Normaliser.from_options(keep=["meta", "ids", "timestamps"])
    value = {"_meta": {"x": 1}, "taskId": "t1", "text": "2026-11-26T05:00:01Z"}
    assert n.normalise(value) == value
    with pytest.raises(ValueError, match="unknown --keep category 'metas'"):
        Normaliser.from_options(keep=["metas"])


def test_ignore_pointers_take_wildcards_and_a_method_or_tool_scope() -> None:
    n = Normaliser.from_options(
        ignores=["/result/content/*/annotations", "tools/call:weather=/result/structuredContent/humidity"]
    )
    value = {
        "result": {
            "content": [{"text": "a", "annotations": {"p": 1}}, {"text": "b"}],
            "structuredContent": {"humidity": 3, "city": "x"},
        }
    }
    assert n.normalise(value, "tools/call", "weather") == {
        "result": {"content": [{"text": "a"}, {"text": "b"}], "structuredContent": {"city": "x"}}
    }
    assert n.normalise(value, "tools/call", "other")["result"]["structuredContent"]["humidity"] == 3
    assert parse_ignore("/a~1b/~0c").segments == ("a/b", "~c")
    assert parse_ignore("notifications/message=/").segments == ()
    assert Normaliser.from_options(ignores=["notifications/message=/"]).dropped("notifications/message")
    with pytest.raises(IgnoreRuleError, match="expected a JSON Pointer"):
        parse_ignore("result.content")


def test_differences_name_json_pointers_and_missing_members() -> None:
    found = differences({"a": [1, {"b": "x"}], "gone": 1}, {"a": [1.0, {"b": "y"}, 3], "new": True})
    assert [(d.pointer, d.recorded, d.replayed) for d in found] == [
        ("/a/1/b", "x", "y"),
        ("/a/2", ABSENT, 3),
        ("/gone", 1, ABSENT),
        ("/new", ABSENT, True),
    ]
    assert not matches(True, 1)


def test_a_redacted_placeholder_in_the_recording_matches_anything() -> None:
    assert matches({"token": "«redacted:0a1b2c3d»"}, {"token": {"any": "thing"}})
    assert matches("Bearer «redacted:0a1b2c3d»", "Bearer s3cret")
    assert not matches("Bearer «redacted:0a1b2c3d»", "Basic s3cret")


def test_nearest_ranks_same_method_first_and_names_the_differing_fields() -> None:
    candidates = [
        (1, "tools/call", {"params": {"name": "weather", "arguments": {"city": "Oslo"}}}),
        (2, "tools/call", {"params": {"name": "add", "arguments": {"a": 1}}}),
        (3, "resources/read", {"params": {"name": "weather", "arguments": {"city": "Lima"}}}),
    ]
    near = nearest("tools/call", {"params": {"name": "weather", "arguments": {"city": "Lima"}}}, candidates)
    assert [n.index for n in near] == [1, 2, 3]
    assert near[0].fields == ("/params/arguments/city",)
    assert near[2].fields[0] == "/method"
    text = miss_message("tools/call", near)
    assert "nearest recorded: #1 tools/call (differs at /params/arguments/city)" in text
    assert request_key("a", {"x": 1, "y": 2}) == request_key("a", {"y": 2, "x": 1})


def test_compare_reports_the_changed_field_and_passes_when_it_is_ignored() -> None:
    recorded, replayed = weather_tape(50), weather_tape(51)
    results = compare_tapes(recorded, replayed, Normaliser())
    assert [r.status for r in results] == [MATCH, DIFFERS]
    [d] = results[1].differences
    assert (d.pointer, d.recorded, d.replayed) == ("/result/structuredContent/humidity", 50, 51)
    ignoring = Normaliser.from_options(ignores=["tools/call=/result/structuredContent/humidity"])
    assert [r.status for r in compare_tapes(recorded, replayed, ignoring)] == [MATCH, MATCH]


def test_compare_checks_notifications_as_a_multiset() -> None:
    results = compare_tapes(weather_tape(50, "working"), weather_tape(50, "idle"), Normaliser())
    assert results[1].status == DIFFERS
    assert results[1].differences[0].pointer == "notification notifications/message /params/data"
    dropping = Normaliser.from_options(ignores=["notifications/message=/"])
    assert compare_tapes(weather_tape(50, "working"), weather_tape(50, "idle"), dropping)[1].status == MATCH


def test_a_message_the_server_sends_on_its_own_may_land_beside_another_request() -> None:
    log = note("notifications/message", {"level": "info", "data": "tick"})
    recorded = build_tape(
        frames(
            ("c2s", req(1, "a")), ("s2c", log), ("s2c", res(1, {})), ("c2s", req(2, "b")), ("s2c", res(2, {}))
        ),
        "r",
    )
    moved = build_tape(
        frames(
            ("c2s", req(1, "a")), ("s2c", res(1, {})), ("c2s", req(2, "b")), ("s2c", log), ("s2c", res(2, {}))
        ),
        "m",
    )
    assert [r.status for r in compare_tapes(recorded, moved, Normaliser())] == [MATCH, MATCH]
    lost = build_tape(
        frames(("c2s", req(1, "a")), ("s2c", res(1, {})), ("c2s", req(2, "b")), ("s2c", res(2, {}))), "l"
    )
    results = compare_tapes(recorded, lost, Normaliser())
    assert [r.status for r in results] == [DIFFERS, MATCH]
    assert results[0].differences[0].pointer == "notification notifications/message"


def test_a_message_sent_between_requests_in_one_run_matches_the_same_beside_a_request_in_the_other() -> None:
    changed = note("notifications/tools/list_changed", {})
    beside = build_tape(
        frames(
            ("c2s", req(1, "a")),
            ("s2c", res(1, {})),
            ("c2s", req(2, "b")),
            ("s2c", changed),
            ("s2c", res(2, {})),
        ),
        "r",
    )
    between = build_tape(
        frames(
            ("c2s", req(1, "a")),
            ("s2c", res(1, {})),
            ("s2c", changed),
            ("c2s", req(2, "b")),
            ("s2c", res(2, {})),
        ),
        "m",
    )
    assert between.loose == [changed] and beside.loose == []
    assert [r.status for r in compare_tapes(beside, between, Normaliser())] == [MATCH, MATCH]
    assert [r.status for r in compare_tapes(between, beside, Normaliser())] == [MATCH, MATCH]
    other = note("notifications/prompts/list_changed", {})
    elsewhere = build_tape(
        frames(
            ("c2s", req(1, "a")),
            ("s2c", res(1, {})),
            ("s2c", other),
            ("c2s", req(2, "b")),
            ("s2c", res(2, {})),
        ),
        "o",
    )
    # A different message between requests stands in for nothing: the one missing is reported.
    assert [r.status for r in compare_tapes(beside, elsewhere, Normaliser())] == [MATCH, DIFFERS]


def test_an_exchange_the_replay_never_answered_is_reported_missing() -> None:
    recorded = weather_tape(50)
    replayed = build_tape(
        frames(("c2s", req(1, "initialize")), ("s2c", res(1, {"serverInfo": {"name": "s"}}))), "r"
    )
    assert [r.status for r in compare_tapes(recorded, replayed, Normaliser())] == [MATCH, MISSING]


def test_reports_text_json_and_junit() -> None:
    results = compare_tapes(weather_tape(50), weather_tape(51), Normaliser())
    session = SessionResult("session abc (weather)", results, replay_id="f" * 32)
    text = "\n".join(format_session(session))
    assert "1/2 exchanges match" in text
    assert '✗ #2 tools/call weather {"city": "Oslo"}: 1 difference(s)' in text
    assert "/result/structuredContent/humidity: recorded 50, replayed 51" in text
    assert summary_line([session]) == "replayed 1 recording(s), 2 exchanges: 1 match, 1 differ"
    doc = report_json([session])
    assert doc["ok"] is False
    assert (
        doc["recordings"][0]["exchanges"][1]["differences"][0]["pointer"]
        == "/result/structuredContent/humidity"
    )
    root = ET.fromstring(report_junit([session]))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["#1 initialize", "#2 tools/call weather"]
    assert cases[0].find("failure") is None and cases[1].find("failure") is not None


def test_lists_of_named_objects_compare_by_name() -> None:
    a = [{"name": "add", "v": 1}, {"name": "weather", "v": 2}]
    b = [{"name": "add", "v": 1}, {"name": "echo", "v": 0}, {"name": "weather", "v": 3}]
    found = differences(a, b)
    assert [(d.pointer, d.recorded, d.replayed) for d in found] == [
        ("/1/v", 2, 3),
        ("/1", ABSENT, {"name": "echo", "v": 0}),
    ]
    reordered = differences(a, list(reversed(a)))
    assert [d.pointer for d in reordered] == [" (order of names)"]


def test_id_keys_match_the_relays() -> None:
    from mcptape.replay.tape import id_key
    from mcptape.wire.ids import encode_id
    from mcptape.wire.ids import id_key as text_key

    for value in (0, 7, -3, 2**70, 1.0, 1.5, "7", "é", None, True):
        assert id_key(value) == text_key(encode_id(value)), value
    assert id_key(1) == id_key(1.0) and id_key(1) != id_key("1")


def test_dates_as_javascript_http_and_ctime_print_them_are_timestamps() -> None:
    n = Normaliser()
    text = (
        "created: Thu Nov 26 2026 15:30:01 GMT+0000 (Coordinated Universal Time)\n"
        "modified: Fri Jan 02 2026 09:05:59 GMT-0500 (Eastern Standard Time)\n"
        "http: Thu, 26 Nov 2026 15:30:01 GMT, mail: Thu, 6 Nov 2026 15:30:01 +0100\n"
        "ctime: Thu Nov  6 15:30:01 2026; size: 6"
    )
    assert n.normalise(text) == (
        "created: <timestamp>\nmodified: <timestamp>\nhttp: <timestamp>, mail: <timestamp>\n"
        "ctime: <timestamp>; size: 6"
    )
    assert Normaliser.from_options(keep=["timestamps"]).normalise(text) == text
    # Words that only look like the start of a date stay.
    assert n.normalise("Thu Nov 26 meeting at 15:30") == "Thu Nov 26 meeting at 15:30"


def test_ignore_text_leaves_out_what_a_regex_matches_inside_strings() -> None:
    n = Normaliser.from_options(texts=[r"took \d+ ms", r"nonce=\w+"])
    value = {"content": [{"type": "text", "text": "done: 3 files, took 12 ms (nonce=ab12)"}], "n": 3}
    assert n.normalise(value) == {
        "content": [{"type": "text", "text": "done: 3 files, <ignored> (<ignored>)"}],
        "n": 3,
    }
    for bad, says in [
        ("(", "not a regular expression"),
        ("x*", "matches the empty string"),
        ("", "give a regular"),
    ]:
        with pytest.raises(IgnoreRuleError, match=re.escape(says)):
            Normaliser.from_options(texts=[bad])
