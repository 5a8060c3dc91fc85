"""The feed's pure parts: pairing frames rows into exchanges, the id cursor, tail's filters and lines."""

from __future__ import annotations

import orjson
import pytest

from mcptape.cli.output import display_width
from mcptape.cli.tail import duration_text, render
from mcptape.view.cursor import GAP_PATIENCE_S, IdCursor
from mcptape.view.feed import EventRow, FeedItem, FrameRow, Pairer
from mcptape.view.filters import ItemFilter

S = "a" * 32


def row(seq: int, direction: str, kind: str, message: object, *, request_seq: int | None = None,
        ts: float | None = None, origin: str | None = None) -> FrameRow:  # fmt: skip
    text = orjson.dumps(message).decode()
    msg = message if isinstance(message, dict) else {}
    method = msg.get("method")
    rpc_id = orjson.dumps(msg["id"]).decode() if "id" in msg else None
    origin = origin or ("client" if direction == "c2s" else "server")
    return FrameRow(seq, S, seq, ts if ts is not None else 100.0 + seq, direction, origin, kind, method,
                    rpc_id, len(text), request_seq, text)  # fmt: skip


def call(rpc_id: object, tool: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}


def test_a_reply_completes_its_request_as_one_exchange_with_tool_and_duration() -> None:
    pairer = Pairer()
    assert pairer.frame(row(1, "c2s", "request", call(1, "weather"), ts=10.0)) is None
    reply = row(
        2, "s2c", "response", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}, request_seq=1, ts=10.25
    )
    item = pairer.frame(reply)
    assert item is not None
    assert (item.type, item.method, item.subject, item.rpc_id, item.status) == (
        "exchange",
        "tools/call",
        "weather",
        "1",
        "ok",
    )
    assert item.duration_ms == pytest.approx(250.0)
    assert (item.seq, item.reply_seq) == (1, 2)
    assert pairer.pending == 0


def test_error_replies_tool_errors_and_input_required_rounds_get_their_status() -> None:
    pairer = Pairer()
    pairer.frame(row(1, "c2s", "request", call(1, "a")))
    pairer.frame(row(2, "c2s", "request", call(2, "b")))
    pairer.frame(row(3, "c2s", "request", call(3, "c")))
    error = pairer.frame(
        row(
            4,
            "s2c",
            "error",
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}},
            request_seq=1,
        )
    )
    tool = pairer.frame(
        row(
            5,
            "s2c",
            "response",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {"isError": True, "content": [{"type": "text", "text": "boom"}]},
            },
            request_seq=2,
        )
    )
    asks = pairer.frame(
        row(
            6,
            "s2c",
            "response",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "result": {"resultType": "input_required", "inputRequests": {"x": {}}},
            },
            request_seq=3,
        )
    )
    assert error is not None and (error.status, error.detail, error.failed) == ("error -32602", "bad", True)
    assert tool is not None and (tool.status, tool.detail, tool.failed) == ("tool error", "boom", True)
    assert asks is not None and (asks.status, asks.failed) == ("input required", False)


def test_a_server_request_is_paired_with_the_clients_answer_and_who_gave_it() -> None:
    pairer = Pairer()
    ask = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {"messages": []}}
    pairer.frame(row(1, "s2c", "request", ask))
    item = pairer.frame(
        row(2, "c2s", "response", {"jsonrpc": "2.0", "id": 0, "result": {}}, request_seq=1, origin="proxy")
    )
    assert item is not None
    assert (item.type, item.method, item.direction, item.origin) == (
        "server_request",
        "sampling/createMessage",
        "s2c",
        "proxy",
    )


def test_a_reply_to_a_request_from_before_the_reader_uses_the_request_row_given() -> None:
    pairer = Pairer()
    reply = row(9, "s2c", "response", {"jsonrpc": "2.0", "id": 4, "result": {}}, request_seq=3)
    assert not pairer.waiting_for(reply)
    item = pairer.frame(reply, row(3, "c2s", "request", call(4, "late")))
    assert item is not None and (item.type, item.subject, item.seq) == ("exchange", "late", 3)
    lone = pairer.frame(row(10, "s2c", "response", {"jsonrpc": "2.0", "id": 99, "result": {}}))
    assert lone is not None and lone.type == "message" and "no request" in lone.detail


def test_requests_still_waiting_when_the_session_ends_are_unanswered() -> None:
    pairer = Pairer()
    pairer.frame(row(1, "c2s", "request", call(1, "slow"), ts=5.0))
    items = pairer.session_ended(S, 7.5)
    assert [(i.type, i.status, i.subject) for i in items] == [("unanswered", "unanswered", "slow")]
    assert items[0].duration_ms == pytest.approx(2500.0)
    assert items[0].failed and pairer.pending == 0


def test_notifications_malformed_lines_and_events_come_inline() -> None:
    pairer = Pairer()
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    note = pairer.frame(row(1, "s2c", "notification", log))
    assert note is not None and (note.type, note.detail) == ("notification", "info hi")
    bad = FrameRow(2, S, 2, 1.0, "s2c", "server", "malformed", None, None, 3, None, "{x\x1b")
    item = pairer.frame(bad)
    assert item is not None and item.status == "malformed" and item.failed
    event = pairer.event(EventRow(1, S, 2.0, "stderr", "warming up", None))
    assert (event.type, event.method, event.detail) == ("event", "stderr", "warming up")


def test_the_cursor_reads_again_ids_skipped_over_until_they_come_or_expire() -> None:
    now = [0.0]
    cursor = IdCursor(10, clock=lambda: now[0])
    cursor.seen([11, 14])
    assert cursor.low() == 11 and cursor.gaps == 2
    assert not cursor.fresh(14) and cursor.fresh(12) and cursor.fresh(15)
    cursor.seen([12])
    assert cursor.low() == 12
    now[0] = GAP_PATIENCE_S + 1
    assert cursor.low() == 14 and cursor.gaps == 0


def item(**fields: object) -> FeedItem:
    base: dict[str, object] = {"type": "exchange", "session_id": S, "ts": 1.0, "method": "tools/call",
                               "subject": "weather", "rpc_id": "7", "direction": "c2s", "duration_ms": 12.0,
                               "status": "ok"}  # fmt: skip
    return FeedItem(**(base | fields))  # type: ignore[arg-type]


def test_filters_by_method_or_tool_kind_slowness_errors_and_session_name() -> None:
    named = {"name": "files-a"}
    assert ItemFilter.build(methods=["tools/*"]).matches(item(), named)
    assert ItemFilter.build(methods=["tools/call:wea*"]).matches(item(), named)
    assert not ItemFilter.build(methods=["tools/call:echo"]).matches(item(), named)
    assert not ItemFilter.build(kinds=["notification"]).matches(item(), named)
    assert ItemFilter.build(kinds=["server-request"]).matches(item(type="server_request"), named)
    assert ItemFilter.build(kinds=["stderr"]).matches(item(type="event", method="stderr"), named)
    assert not ItemFilter.build(kinds=["stderr"]).matches(item(type="event", method="process_exit"), named)
    assert ItemFilter.build(slow_ms=10).matches(item(), named)
    assert not ItemFilter.build(slow_ms=20).matches(item(), named)
    assert not ItemFilter.build(slow_ms=1).matches(item(type="notification"), named)
    assert not ItemFilter.build(errors=True).matches(item(), named)
    assert ItemFilter.build(errors=True).matches(item(status="error -32601"), named)
    assert ItemFilter.build(names=["files-*"]).matches(item(), named)
    assert not ItemFilter.build(names=["files-*"]).matches(item(), {"name": None})
    with pytest.raises(ValueError, match="unknown kind"):
        ItemFilter.build(kinds=["exchanges"])


@pytest.mark.parametrize(
    "line_item",
    [
        item(
            subject="a-tool-with-a-very-long-name-indeed",
            rpc_id='"a-long-string-id"',
            duration_ms=123456.0,
            status="error -32603",
            detail="x" * 10,
        ),
        item(type="notification", method="notifications/resources/list_changed", subject=None, detail=""),
        item(
            type="server_request", direction="s2c", method="elicitation/create", subject=None, origin="proxy"
        ),
        item(type="unanswered", status="unanswered"),
    ],
)
def test_lines_keep_their_columns_within_80_with_a_long_session_name(line_item: FeedItem) -> None:
    line = render(line_item, {"name": "a-session-name-longer-than-ten"})
    assert line.index("→" if line_item.direction == "c2s" else "←") == 24
    if line_item.type != "notification":
        end = line.index(line_item.status) + len(line_item.status)
        assert display_width(line[:end]) <= 80, line


def test_recorded_control_characters_are_escaped_in_lines() -> None:
    line = render(item(subject="evil\x1b]0;owned\x07", detail="\x1b[2J", status="error 1"), {"name": "n\x1b"})
    assert "\x1b" not in line and "\\u001b" in line


def test_durations_read_like_a_person_writes_them() -> None:
    assert [duration_text(v) for v in (0.4215, 12.34, 1240.0, 123000.0)] == [
        "0.42ms",
        "12.3ms",
        "1.24s",
        "2m03s",
    ]
