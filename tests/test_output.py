"""The shared output formats: tables for people, JSON / NDJSON / CSV for programs."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import click
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptape.cli.output import (
    cut,
    display_width,
    emit,
    fit_widths,
    format_float,
    output_options,
    unique_keys,
)

COLUMNS = ["id", "name", "frames", "latency"]
ROWS: list[tuple[Any, ...]] = [
    ("a1b2", "everything", 47, 0.2085),
    ("c3d4", None, 3, 1234.56789),
]


def render(rows: Any, columns: Any, fmt: str, width: int | None = None) -> str:
    out = io.StringIO()
    emit(rows, columns, fmt, file=out, width=width)
    return out.getvalue()


def test_table_aligns_columns_and_right_aligns_numbers() -> None:
    assert render(ROWS, COLUMNS, "table").splitlines() == [
        "id    name        frames   latency",
        "----  ----------  ------  --------",
        "a1b2  everything      47    0.2085",
        "c3d4                   3  1234.568",
    ]


def test_table_cuts_the_widest_cells_with_an_ellipsis_to_fit_the_width() -> None:
    rows = [("x" * 10, "y" * 200)]
    lines = render(rows, ["short", "long"], "table", width=40).splitlines()
    assert all(display_width(line) <= 40 for line in lines)
    assert lines[2] == "x" * 10 + "  " + "y" * 27 + "…"


def test_table_measures_wide_characters_as_two_columns() -> None:
    lines = render([("🎉🎉", 1), ("ab", 2)], ["e", "n"], "table").splitlines()
    assert lines[2] == "🎉🎉  1"
    assert lines[3] == "ab    2"
    assert cut("日本語テキスト", 7) == "日本語…"


def test_table_shows_control_characters_escaped_so_each_row_stays_one_line() -> None:
    text = render([("line one\nline two\ttab",)], ["text"], "table")
    assert text.splitlines()[2] == "line one\\nline two\\ttab"


def test_table_shows_bytes_as_text_or_as_their_size() -> None:
    lines = render([(b"plain", b"\xff\xfe\x00")], ["utf8", "binary"], "table").splitlines()
    assert lines[2] == "plain  <3 bytes>"


def test_table_with_no_rows_prints_the_header() -> None:
    assert render([], ["id", "name"], "table") == "id  name\n--  ----\n"


def test_json_is_one_array_of_objects() -> None:
    assert json.loads(render(ROWS, COLUMNS, "json")) == [
        {"id": "a1b2", "name": "everything", "frames": 47, "latency": 0.2085},
        {"id": "c3d4", "name": None, "frames": 3, "latency": 1234.56789},
    ]
    assert render([], COLUMNS, "json") == "[]\n"


def test_nl_writes_one_object_per_line_with_binary_as_base64_and_nan_as_null() -> None:
    text = render([(b"\xff", float("nan")), (b"ok", 1.5)], ["blob", "x"], "nl")
    assert [json.loads(line) for line in text.splitlines()] == [
        {"blob": {"$base64": True, "encoded": "/w=="}, "x": None},
        {"blob": "ok", "x": 1.5},
    ]


def test_repeated_column_names_get_distinct_keys() -> None:
    assert unique_keys(["id", "id", "name", "id"]) == ["id", "id_2", "name", "id_3"]
    assert json.loads(render([(1, 2)], ["id", "id"], "nl")) == {"id": 1, "id_2": 2}


def test_csv_quotes_fields_and_keeps_full_precision() -> None:
    text = render([("a,b", None, 0.1 + 0.2, "two\nlines")], ["t", "n", "f", "m"], "csv")
    assert list(csv.reader(io.StringIO(text))) == [
        ["t", "n", "f", "m"],
        ["a,b", "", "0.30000000000000004", "two\nlines"],
    ]


def test_floats_for_people_have_six_significant_digits() -> None:
    assert format_float(0.000195) == "0.000195"
    assert format_float(3.083944320678711) == "3.08394"
    assert format_float(1732650000.123456) == "1732650000.123"
    assert format_float(2.0) == "2"
    assert format_float(1e-7) == "1e-07"


def test_fit_widths_never_goes_below_the_minimum() -> None:
    assert fit_widths([10, 100], [5, 6], 40) == [10, 28]
    assert fit_widths([10, 100], [10, 50], 20) == [10, 50]
    assert fit_widths([10, 20], [5, 6], None) == [10, 20]


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(st.lists(st.text(max_size=60), min_size=3, max_size=3), max_size=5),
    width=st.integers(min_value=30, max_value=120),
)
def test_every_table_line_fits_a_width_that_leaves_room_for_the_minimums(
    cells: list[list[str]], width: int
) -> None:
    text = render(cells, ["a", "b", "c"], "table", width=width)
    assert all(display_width(line) <= width for line in text.splitlines())


def test_output_options_give_one_fmt_parameter_defaulting_to_table() -> None:
    @click.command()
    @output_options
    def show(fmt: str) -> None:
        click.echo(fmt)

    runner = CliRunner()
    assert runner.invoke(show, []).output == "table\n"
    for name in ("json", "nl", "csv", "table"):
        assert runner.invoke(show, [f"--{name}"]).output == f"{name}\n"


def test_columns_to_keep_are_never_cut_the_others_shrink() -> None:
    rows = [("0123456789ab", "n" * 30, "u" * 30)]
    out = io.StringIO()
    emit(rows, ["id", "name", "upstream"], "table", file=out, width=60, keep=("id", "name"))
    line = out.getvalue().splitlines()[2]
    assert line == "0123456789ab  " + "n" * 30 + "  " + "u" * 13 + "…"
    assert len(line) == 60
