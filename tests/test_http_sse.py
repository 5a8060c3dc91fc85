"""The SSE parser and encoder, with plain values."""

from __future__ import annotations

from mcptape.proxy.http.sse import SseEvent, SseParser, encode_event


def test_events_come_out_as_soon_as_their_blank_line_arrives() -> None:
    parser = SseParser()
    assert parser.feed(b'event: message\ndata: {"a"') == []
    assert parser.feed(b":1}\nid: 7\n") == []
    assert parser.feed(b"\n") == [SseEvent(b'{"a":1}', "message", "7")]
    assert parser.last_event_id == "7"


def test_crlf_split_between_chunks_and_bare_cr_end_lines() -> None:
    parser = SseParser()
    events = parser.feed(b"data: one\r")
    events += parser.feed(b"\n\r")
    events += parser.feed(b"\ndata: two\r\r")
    assert [e.data for e in events] == [b"one", b"two"]


def test_multiline_data_comments_retry_and_the_endpoint_event() -> None:
    parser = SseParser()
    events = parser.feed(
        b": keep-alive\n\nretry: 1500\nevent: endpoint\ndata: /message?s=1\n\ndata: a\ndata: b\n\n"
    )
    assert events[0] == SseEvent(b"/message?s=1", "endpoint", None, 1500)
    assert events[1].data == b"a\nb" and events[1].event == "message"


def test_every_byte_boundary_gives_the_same_events() -> None:
    stream = b'id: 1\nevent: message\ndata: {"x": "\xc3\xa9"}\n\nid: 2\ndata:{"y":2}\r\n\r\n'
    whole = SseParser().feed(stream)
    for cut in range(len(stream)):
        parser = SseParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == whole
    assert [e.id for e in whole] == ["1", "2"]


def test_an_event_beyond_the_size_limit_is_refused() -> None:
    parser = SseParser(max_event_bytes=10)
    try:
        parser.feed(b"data: " + b"x" * 11 + b"\n")
    except ValueError as exc:
        assert "larger than 10 bytes" in str(exc)
    else:
        raise AssertionError("an oversized event was accepted")


def test_encoded_events_parse_back_to_the_same_bytes() -> None:
    data = b'{"jsonrpc":"2.0","method":"x"}'
    encoded = encode_event(data, event="message", id="s1-4")
    assert encoded == b'id: s1-4\nevent: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n'
    assert SseParser().feed(encoded) == [SseEvent(data, "message", "s1-4")]
    assert SseParser().feed(encode_event(b"a\nb"))[0].data == b"a\nb"
