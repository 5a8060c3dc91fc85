from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcptape.proxy.links.framing import LineSplitter


def test_lines_split_on_newline_only_keeping_carriage_returns() -> None:
    s = LineSplitter()
    assert s.feed(b'{"a":1}\r\n{"b"') == [b'{"a":1}\r']
    assert s.feed(b":2}\n\n") == [b'{"b":2}', b""]
    assert s.finish() is None


def test_trailing_bytes_without_newline_are_returned_at_end() -> None:
    s = LineSplitter()
    assert s.feed(b"abc") == []
    assert s.pending() == 3
    assert s.finish() == b"abc"


def test_a_20_mb_line_in_small_chunks_is_one_line() -> None:
    s = LineSplitter()
    big = b"x" * (20 * 1024 * 1024)
    out: list[bytes] = []
    for i in range(0, len(big), 65536):
        out += s.feed(big[i : i + 65536])
    out += s.feed(b"\nnext\n")
    assert [len(x) for x in out] == [len(big), 4]


@given(st.lists(st.binary(), max_size=20), st.lists(st.integers(min_value=1, max_value=50), min_size=1))
def test_any_chunking_gives_the_same_lines(parts: list[bytes], sizes: list[int]) -> None:
    data = b"\n".join(parts)
    expected = data.split(b"\n")
    s = LineSplitter()
    got: list[bytes] = []
    i = 0
    k = 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        got += s.feed(data[i : i + n])
        i += n
        k += 1
    rest = s.finish()
    got.append(rest if rest is not None else b"")
    assert got == expected
