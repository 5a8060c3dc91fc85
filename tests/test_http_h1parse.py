"""The forwarding client's HTTP/1.1 response parser, fed plain bytes in every split."""

from __future__ import annotations

import pytest

from mcptape.proxy.http.h1parse import END, ResponseError, ResponseHead, ResponseParser, parse_head

SSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: abc\r\n"
    b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"19\r\nevent: message\ndata: {}\n\n\r\n"
    b"5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"
)


def feed_split(raw: bytes, size: int, **kw: bool) -> tuple[ResponseHead, bytes, int]:
    parser = ResponseParser(**kw)
    parts: list[ResponseHead | bytes] = []
    for i in range(0, len(raw), size):
        parts += parser.feed(raw[i : i + size])
    heads = [p for p in parts if isinstance(p, ResponseHead)]
    body = [p for p in parts if isinstance(p, bytes)]
    assert len(heads) == 1 and body[-1] == END and END not in body[:-1]
    return heads[0], b"".join(body), len(body)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
def test_a_chunked_stream_is_unchunked_whatever_the_split(size: int) -> None:
    head, body, _ = feed_split(SSE, size)
    assert (head.status, head.reason, head.keep_alive) == (200, "OK", True)
    assert head.get("mcp-session-id") == "abc" and head.get("content-type") == "text/event-stream"
    assert [v for k, v in head.headers if k == "Set-Cookie"] == ["a=1", "b=2"]  # repeats kept
    assert body == b"event: message\ndata: {}\n\nhello"


def test_each_chunk_comes_out_as_soon_as_it_arrives() -> None:
    parser = ResponseParser()
    first = parser.feed(SSE[: SSE.index(b"5;ext")])
    assert isinstance(first[0], ResponseHead) and first[1:] == [b"event: message\ndata: {}\n\n"]
    assert parser.feed(SSE[SSE.index(b"5;ext") :]) == [b"hello", END]


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_a_content_length_body_ends_at_its_length(size: int) -> None:
    raw = b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nContent-Type: application/json\r\n\r\n{"ok":true}'
    head, body, _ = feed_split(raw, size)
    assert body == b'{"ok":true}' and head.keep_alive


def test_interim_heads_are_skipped_and_bodyless_answers_end_at_once() -> None:
    head, body, _ = feed_split(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 4
    )
    assert (head.status, body) == (202, b"")
    assert feed_split(b"HTTP/1.1 204 No Content\r\n\r\n", 3)[0].status == 204
    parser = ResponseParser(head_request=True)
    assert parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n")[1:] == [END]


def test_a_body_without_length_runs_until_the_connection_closes() -> None:
    parser = ResponseParser()
    parts = parser.feed(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}")
    assert parts[1:] == [b"{}"] and not parser.done and parser.until_close
    assert parser.feed(b"[]") == [b"[]"]
    assert parser.eof() == [END] and parser.done


def test_keep_alive_follows_version_and_connection_header() -> None:
    assert not parse_head(b"HTTP/1.1 200 OK\r\nConnection: close").keep_alive
    assert not parse_head(b"HTTP/1.0 200 OK").keep_alive
    assert parse_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive").keep_alive
    assert parse_head(b"HTTP/1.1 401 Unauthorized").reason == "Unauthorized"


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc",
    ],
)
def test_a_malformed_answer_is_a_response_error(raw: bytes) -> None:
    with pytest.raises(ResponseError):
        ResponseParser().feed(raw)


def test_a_connection_closed_mid_answer_is_a_response_error() -> None:
    parser = ResponseParser()
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    with pytest.raises(ResponseError, match="middle of the body"):
        parser.eof()
    with pytest.raises(ResponseError, match="before its head"):
        ResponseParser().eof()


def test_a_huge_head_is_refused() -> None:
    with pytest.raises(ResponseError, match="larger than"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 20_000)


def test_a_non_ascii_header_value_is_read_as_utf8() -> None:
    head = parse_head("HTTP/1.1 200 OK\r\nX-Name: café".encode())
    assert head.get("x-name") == "café"
