"""Long differences are shown where they differ: a unified diff of lines, or one line's changed part."""

from __future__ import annotations

from mcptape.replay.compare import DIFFERS, ExchangeResult, format_exchange
from mcptape.replay.matchers import Difference
from mcptape.replay.showdiff import long_text_lines


def numbered(changed: dict[int, str] | None = None, count: int = 200) -> str:
    lines = [f"line {i}: " + "x" * 40 for i in range(count)]
    for i, text in (changed or {}).items():
        lines[i] = text
    return "\n".join(lines) + "\n"


def test_a_changed_line_of_a_long_text_is_shown_as_a_unified_diff_around_it() -> None:
    recorded = numbered()
    replayed = numbered({150: "line 150: " + "x" * 20 + "CHANGED" + "x" * 13})
    lines = long_text_lines(recorded, replayed)
    assert lines is not None
    assert lines[0] == "the text differs from line 151 (200 lines recorded, 200 lines replayed):"
    assert "-line 150: " + "x" * 40 in lines
    assert "+line 150: " + "x" * 20 + "CHANGED" + "x" * 13 in lines
    assert "@@ -149,5 +149,5 @@" in lines
    assert not any(line.lstrip(" -+").startswith(("line 0:", "line 147:", "line 153:")) for line in lines)


def test_a_long_diff_is_cut_and_says_how_much_was_left_out() -> None:
    lines = long_text_lines(numbered(), "something else entirely\n")
    assert lines is not None and len(lines) <= 42
    assert lines[-1].startswith("... ") and lines[-1].endswith(" more lines of diff")


def test_one_long_line_shows_the_changed_part_with_the_identical_parts_counted() -> None:
    recorded = '{"a": "' + "y" * 300 + "Z" + "y" * 100 + '"}'
    replayed = recorded.replace("Z", "W")
    lines = long_text_lines(recorded, replayed)
    assert lines is not None
    assert (
        lines[0] == "the text differs from character 308 (410 characters recorded, 410 characters replayed):"
    )
    assert lines[1] == f"  recorded  …(277 identical) {'y' * 30}Z{'y' * 30} …(72 more)"
    assert lines[2] == f"  replayed  …(277 identical) {'y' * 30}W{'y' * 30} …(72 more)"


def test_short_values_and_other_types_are_left_to_the_plain_format() -> None:
    assert long_text_lines("a\nb", "a\nc") is None
    assert long_text_lines(45, 46) is None
    assert long_text_lines("x" * 200, None) is None


def test_a_differing_exchange_names_its_arguments_and_shows_a_repeated_text_once() -> None:
    recorded, replayed = numbered(), numbered({150: "line 150: changed"})
    result = ExchangeResult(
        4,
        "tools/call",
        "read_text_file",
        DIFFERS,
        [
            Difference("/result/content/0/text", recorded, replayed),
            Difference("/result/structuredContent/content", recorded, replayed),
            Difference("/result/structuredContent/size", 9000, 8976),
        ],
        arguments={"path": "/srv/files/big.txt"},
    )
    lines = format_exchange(result)
    assert lines[0] == '✗ #4 tools/call read_text_file {"path": "/srv/files/big.txt"}: 3 difference(s)'
    assert (
        lines[1]
        == "    /result/content/0/text: the text differs from line 151 (200 lines recorded, 200 lines replayed):"
    )
    assert "      +line 150: changed" in lines
    assert "    /result/structuredContent/content: the same difference as /result/content/0/text" in lines
    assert lines[-1] == "    /result/structuredContent/size: recorded 9000, replayed 8976"


def test_long_arguments_keep_both_ends_of_their_strings() -> None:
    from mcptape.replay.showdiff import arguments_text

    path = "/home/someone/projects/a-very-long-directory-name/and-another-one/notes/2026/big.txt"
    text = arguments_text({"path": path, "head": 3})
    assert len(text) <= 80
    assert text == '{"path": "/home/someon…another-one/notes/2026/big.txt", "head": 3}'
