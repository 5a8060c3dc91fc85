"""`serve` and the replay player find a recorded request by method and params: which params are the same."""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.replay.book import AnswerBook, Entry
from mcptape.replay.normalise import Normaliser

ABSENT: Any = object()  # the request has no "params" member at all


def book_of(params: Any, normaliser: Normaliser | None = None) -> AnswerBook:
    recorded = None if params is ABSENT else params
    return AnswerBook([Entry(1, "tools/list", recorded, "the tools")], normaliser)


# What the TypeScript SDK sends (no params), the Inspector CLI ({}), other clients (null, _meta only).
SAME_EMPTY = [ABSENT, None, {}, {"_meta": {"progressToken": 7}}]


@pytest.mark.parametrize("recorded", SAME_EMPTY, ids=["absent", "null", "empty", "meta-only"])
@pytest.mark.parametrize("asked", SAME_EMPTY, ids=["absent", "null", "empty", "meta-only"])
def test_absent_null_empty_and_meta_only_params_are_the_same_request(recorded: Any, asked: Any) -> None:
    entry = book_of(recorded).take("tools/list", None if asked is ABSENT else asked)
    assert entry is not None and entry.answer == "the tools"


def test_params_with_a_member_are_not_empty_params() -> None:
    assert book_of({}).take("tools/list", {"cursor": "2"}) is None
    assert book_of(ABSENT).take("tools/list", []) is None  # positional params are another request


def test_ignore_takes_pointers_into_the_request_as_the_near_miss_names_them() -> None:
    recorded = {"name": "weather", "arguments": {"city": "Lisbon", "when": "today"}}
    asked = {"name": "weather", "arguments": {"city": "Lisbon", "when": "tomorrow"}}
    entries = [Entry(1, "tools/call", recorded, "forecast")]
    [near] = AnswerBook(entries).near("tools/call", asked)
    assert near.fields == ("/params/arguments/when",)
    assert AnswerBook(entries).take("tools/call", asked) is None
    ignoring = Normaliser.from_options(ignores=[f"tools/call:weather={near.fields[0]}"])
    found = AnswerBook([Entry(1, "tools/call", recorded, "forecast")], ignoring).take("tools/call", asked)
    assert found is not None and found.answer == "forecast"


def test_ignoring_a_methods_params_matches_any_params() -> None:
    ignoring = Normaliser.from_options(ignores=["tools/list=/params"])
    entry = book_of({"cursor": "abc"}, ignoring).take("tools/list", {"cursor": "xyz"})
    assert entry is not None and entry.answer == "the tools"
