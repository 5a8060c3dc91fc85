"""Splicing edits into a config's text: every edit in one pass, in any order given."""

from __future__ import annotations

import json

import pytest

from mcptape.config.edit import EditError, _apply, server_entries, splice


def test_edits_apply_in_text_order_whatever_order_they_come_in() -> None:
    text = "0123456789"
    edits = [(8, 9, "E"), (0, 0, "<"), (2, 4, ""), (4, 4, "+"), (10, 10, ">")]
    assert _apply(text, edits) == "<01+4567E9>"
    assert _apply(text, list(reversed(edits))) == "<01+4567E9>"
    assert _apply(text, []) == text


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(EditError, match="overlap"):
        _apply("0123456789", [(1, 5, "a"), (4, 6, "b")])


def test_splicing_thousands_of_entries_changes_each_one_and_nothing_else() -> None:
    servers = {f"s{i}": {"command": "cat"} for i in range(3000)}
    text = json.dumps({"mcpServers": servers}, indent=1)
    spans = server_entries(text)
    new = {name: json.dumps({"command": name}) for name in servers if name.endswith("7")}
    result = json.loads(splice(text, spans, new))["mcpServers"]
    assert len(result) == 3000
    assert all(result[name] == ({"command": name} if name in new else {"command": "cat"}) for name in servers)
