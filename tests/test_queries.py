"""Pure parts of reading recordings back: session-ref messages, handshake facts, timeline lines."""

from __future__ import annotations

import json
from typing import Any

from mcptape.cli.sessions import format_duration, status_text
from mcptape.cli.show import Timeline, merge, render_line
from mcptape.store.queries import (
    SessionKey,
    StoredFrame,
    ambiguous_message,
    handshake_info,
    looks_like_id_prefix,
    unknown_message,
)
from mcptape.wire.frame import Frame
from mcptape.wire.summaries import summarize_request, summarize_result
from tests.helpers.paths import CORPUS

A = SessionKey("3f9a2c000000aaaa", "everything", 100.0)
B = SessionKey("3f9a2c111111bbbb", None, 200.0)


def stored(seq: int, text: str, direction: str, ts: float = 0.0, origin: str | None = None) -> StoredFrame:
    frame = Frame(text.encode(), direction)  # type: ignore[arg-type]
    return StoredFrame(
        seq, ts, direction, origin or str(frame.origin), frame.kind, frame.method, frame.rpc_id,
        frame.size, text, None, None,
    )  # fmt: skip


def corpus_frames(name: str) -> list[StoredFrame]:
    lines = (CORPUS / name).read_text().split("\n")[:-1]
    return [stored(i, (o := json.loads(line))["frame"], o["dir"], o["t"]) for i, line in enumerate(lines, 1)]


def test_ambiguous_prefix_message_lists_candidates_on_one_line() -> None:
    message = ambiguous_message("3f9a", [A, B], more=True)
    assert message == (
        "session prefix '3f9a' is ambiguous: it matches 3f9a2c000000 (everything), 3f9a2c111111, ...; "
        "type more characters of the id"
    )
    assert "\n" not in message


def test_unknown_ref_message_names_the_latest_sessions_or_says_there_are_none() -> None:
    assert "latest: 3f9a2c111111, 3f9a2c000000 (everything)" in unknown_message("nope", [B, A])
    assert "no recorded sessions yet" in unknown_message("last", [])


def test_only_lowercase_hex_can_be_an_id_prefix() -> None:
    assert looks_like_id_prefix("3f9a")
    assert not looks_like_id_prefix("everything")
    assert not looks_like_id_prefix("3f9a%")


def test_handshake_info_reads_initialize_and_2026_discover() -> None:
    initialize = {"params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "c", "version": "1"}}}
    result = {"result": {"protocolVersion": "2025-11-25", "serverInfo": {"name": "s", "version": "2"}}}
    assert handshake_info(initialize, result) == {
        "protocol_version": "2025-11-25",
        "client_name": "c",
        "client_version": "1",
        "server_name": "s",
        "server_version": "2",
    }
    frames = corpus_frames("py2026-client-server.jsonl")
    assert handshake_info(frames[0].message(), frames[1].message()) == {
        "protocol_version": "2026-07-28",
        "client_name": "mcp",
        "client_version": "0.1.0",
        "server_name": "py-2026",
    }


def test_responses_are_named_after_the_request_they_answer_per_direction() -> None:
    timeline = Timeline()
    lines = [timeline.frame_line(f) for f in corpus_frames("everything-ts-client.jsonl")]
    by_text = [(line.mark, line.kind, line.method) for line in lines]
    # id 0 is the client's initialize and, later, the server's sampling request
    assert by_text[1] == ("←", "response", "initialize #0")
    sampling = by_text.index(("←", "request", "sampling/createMessage #0"))
    assert by_text[sampling + 1] == ("→", "response", "sampling/createMessage #0")
    assert by_text[sampling + 2] == ("←", "response", "tools/call #10")
    assert timeline.pending == {}


def test_timeline_summaries_say_what_each_message_carries() -> None:
    timeline = Timeline()
    summaries = [timeline.frame_line(f).summary for f in corpus_frames("everything-ts-client.jsonl")]
    assert summaries[0] == "2025-11-25 client acceptance 1.0.0"
    assert summaries[1] == "server mcp-servers/everything 2.0.0 (2025-11-25)"
    assert 'echo {"message":"héllo \u2028 ✓ \\"q\\""}' in summaries
    assert "get-sum: The sum of 2 and 3.5 is 5.5." in summaries
    assert "no-such-tool: isError: MCP error -32602: Tool no-such-tool not found" in summaries
    assert "1/3 (token 13)" in summaries
    assert any(s.startswith("info everything-server: Roots") for s in summaries)
    assert "acc-model: canned-from-client" in summaries
    assert "1 root: file:///tmp/acc-root" in summaries


def test_error_and_malformed_and_proxy_frames_are_summarised() -> None:
    timeline = Timeline()
    timeline.frame_line(
        stored(1, '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}', "c2s")
    )
    error = timeline.frame_line(
        stored(
            2,
            '{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"upstream exited"}}',
            "s2c",
            origin="proxy",
        )
    )
    assert (error.kind, error.method, error.summary) == (
        "error",
        'tools/call #"a"',
        "[proxy] -32000 upstream exited",
    )
    bad = timeline.frame_line(stored(3, "not json at all", "s2c"))
    assert (bad.kind, bad.summary) == ("malformed", "not JSON-RPC: 'not json at all'")


def test_summaries_leave_out_2026_meta_and_fall_back_to_compact_json() -> None:
    assert summarize_request("custom/thing", {"a": 1, "_meta": {"x": 2}}) == '{"a":1}'
    assert summarize_request("tools/list", {"_meta": {"x": 2}}) == ""
    assert summarize_result("ping", None, {}) == "ok"
    tools: dict[str, Any] = {"tools": [{"name": f"t{i}"} for i in range(10)]}
    assert summarize_result("tools/list", None, tools) == "10 tools: t0, t1, t2, t3, t4, t5, t6, t7, ..."


def test_rendered_lines_show_the_offset_from_the_session_start() -> None:
    line = Timeline().frame_line(stored(1, '{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s", ts=100.2134))
    assert render_line(line, 100.0) == " +0.213s → req    ping #1"


def test_an_event_with_a_long_kind_keeps_its_text_in_the_summary_column() -> None:
    from mcptape.cli.show import Line

    # `show` of a --url session: "upstream_connect" pushed its URL 16 columns past the others.
    frame = render_line(Line(1.0, "→", "request", "tools/list #2", "x"), 1.0)
    for kind in ("stderr", "upstream_connect", "http_session_deleted"):
        event = render_line(Line(1.0, "·", kind, "", "x"), 1.0)
        assert event.index(" x") == frame.index(" x"), (event, frame)


def test_events_interleave_with_frames_by_time_and_frames_win_ties() -> None:
    timeline = Timeline()
    frames = [
        timeline.frame_line(stored(i, '{"jsonrpc":"2.0","method":"x"}', "c2s", ts=t))
        for i, t in enumerate([1, 3])
    ]
    from mcptape.cli.show import Line

    events = [
        Line(0.5, "·", "stderr", "", "a"),
        Line(3, "·", "stderr", "", "b"),
        Line(9, "·", "process_exit", "", ""),
    ]
    assert [line.ts for line in merge(iter(frames), iter(events))] == [0.5, 1, 3, 3, 9]


def test_status_and_duration_read_naturally() -> None:
    assert status_text("ok", 0) == "ok"
    assert status_text("error", -9) == "error (server signal 9)"
    assert status_text("running", None) == "running"
    assert [format_duration(s) for s in (0.8412, 12.34, 245, 7380, None)] == [
        "0.84s",
        "12.3s",
        "4m05s",
        "2h03m",
        "",
    ]


def test_batches_register_their_requests_so_batched_responses_are_named() -> None:
    timeline = Timeline()
    batch = timeline.frame_line(
        stored(
            1,
            '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]',
            "c2s",
        )
    )
    assert (batch.kind, batch.summary) == ("batch", "batch of 2: ping, notifications/x")
    assert timeline.pending == {("c2s", "1"): ("ping", None)}
    reply = timeline.frame_line(stored(2, '[{"jsonrpc":"2.0","id":1,"result":{}}]', "s2c"))
    assert reply.summary == "batch of 1: response"
    assert timeline.pending == {}


def test_a_session_name_with_surrounding_spaces_is_found_as_typed_and_trimmed(tmp_path: Any) -> None:
    from mcptape.store import open_store
    from mcptape.store.queries import resolve_session

    with open_store(str(tmp_path / "rec.db")) as store:
        spaced = store.create_session(mode="record", name=" files ")
        plain = store.create_session(mode="record", name="fetch")
        assert resolve_session(store, " files ")["id"] == spaced
        assert resolve_session(store, "  fetch ")["id"] == plain
