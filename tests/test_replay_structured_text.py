"""A tool's text content that repeats its structuredContent is compared once, as structured content.

The specification asks a tool with structured output to send its JSON as text too (the demo's
`weather` does): a changed field used to be reported twice, and `--ignore` of the field left
the text differing, so the README's own `--ignore` example did not make the replay pass.
"""

from __future__ import annotations

import json
from typing import Any

from mcptape.replay.compare import compare_response
from mcptape.replay.normalise import MIRROR, Normaliser
from mcptape.replay.tape import Exchange

FIELD = "/result/structuredContent/humidity_percent"


def weather(humidity: int, *, indent: int | None = 2, text: str | None = None) -> dict[str, Any]:
    structured = {"city": "Lisbon", "conditions": "foggy", "humidity_percent": humidity}
    shown = text if text is not None else json.dumps(structured, indent=indent)
    return {
        "jsonrpc": "2.0",
        "id": 6,
        "result": {"content": [{"type": "text", "text": shown}], "structuredContent": structured},
    }


def compared(recorded: dict[str, Any], replayed: dict[str, Any], normaliser: Normaliser) -> list[str]:
    request = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/call",
        "params": {"name": "weather", "arguments": {}},
    }
    a = Exchange(6, request, recorded)
    b = Exchange(6, request, replayed)
    return [d.pointer for d in compare_response(normaliser, a, b).differences]


def test_a_changed_field_is_reported_once_and_ignoring_it_covers_the_text() -> None:
    assert compared(weather(45), weather(46), Normaliser()) == [FIELD]
    assert (
        compared(weather(45), weather(46), Normaliser.from_options(ignores=[f"tools/call:weather={FIELD}"]))
        == []
    )


def test_the_text_is_folded_only_when_it_is_the_structured_content() -> None:
    assert compared(weather(45), weather(45, indent=None), Normaliser()) == []  # the same JSON, other spacing
    prose = weather(45, text="Foggy in Lisbon, 45% humidity")
    changed = weather(46, text="Foggy in Lisbon, 46% humidity")
    assert compared(prose, changed, Normaliser()) == ["/result/content/0/text", FIELD]
    folded = Normaliser().normalise({"result": weather(45)["result"]}, "tools/call", "weather")
    assert folded["result"]["content"][0]["text"] == MIRROR
    assert Normaliser().normalise({"result": weather(45)["result"]}, "resources/read") == {
        "result": weather(45)["result"]
    }
