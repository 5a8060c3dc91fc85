"""Server requests answered from the injection rules, or declined with a warning, and captured."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from mcptape.client.errors import ApplicationError
from mcptape.client.handlers import decline, request_with_input, rules_handler
from mcptape.client.session import CallSession, SessionOptions, Target
from mcptape.rules.rules import Rules
from tests.helpers.paths import ROOT

PAGED = [sys.executable, str(ROOT / "tests" / "servers" / "paged.py")]
ASK_NAME = [sys.executable, str(ROOT / "tests" / "servers" / "ask_name.py")]


def _call(argv: list[str], rules: Rules, version: str | None, tool: str, arguments: dict[str, Any]) -> Any:
    warnings: list[str] = []

    async def main() -> tuple[Any, list[dict[str, Any]]]:
        options = SessionOptions(
            record=False,
            protocol_version=version,
            handler=rules_handler(rules, warnings.append),
            capabilities=rules.capabilities(),
        )
        async with CallSession(Target(tool, argv=argv), options) as session:
            session.core.tool_in_flight = tool
            try:
                result: Any = await request_with_input(
                    session.core, "tools/call", {"name": tool, "arguments": arguments}
                )
            except ApplicationError as exc:
                result = exc
            return result, [r.as_dict() for r in session.core.server_requests]

    result, requests = asyncio.run(main())
    return result, requests, warnings


@pytest.mark.slow
def test_without_rules_every_server_request_is_declined_captured_and_warned() -> None:
    result, requests, warnings = _call(PAGED, Rules(), "2025-11-25", "ask", {})
    text = result["content"][0]["text"]
    assert "roots: error Method not found" in text
    assert "sampling: error User rejected sampling request" in text
    assert 'elicitation: {"action":"decline"}' in text
    assert [(r["method"], r["answeredBy"]) for r in requests] == [
        ("roots/list", "default"),
        ("sampling/createMessage", "default"),
        ("elicitation/create", "default"),
    ]
    assert len(warnings) == 3 and "--handle-sampling" in warnings[1]


@pytest.mark.slow
def test_rules_answer_roots_sampling_and_elicitation() -> None:
    rules = Rules.from_options(handle_sampling="auto", handle_elicitation="auto", roots=["/tmp=tmp"])
    result, requests, warnings = _call(PAGED, rules, "2025-11-25", "ask", {})
    text = result["content"][0]["text"]
    assert 'roots: {"roots":[{"uri":"file:///tmp","name":"tmp"}]}' in text
    assert '"model":"mcptape-auto"' in text
    assert 'elicitation: {"action":"accept"' in text
    assert {r["answeredBy"] for r in requests} == {"rule"} and warnings == []


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
@pytest.mark.slow
def test_an_elicitation_rule_answers_in_both_eras(version: str) -> None:
    rules = Rules.from_options(handle_elicitation='{"action": "accept", "content": {"name": "Ada"}}')
    result, requests, _ = _call(ASK_NAME, rules, version, "greet", {"greeting": "Hello"})
    assert result["content"][0]["text"] == "Hello, Ada!"
    assert requests[0]["method"] == "elicitation/create" and requests[0]["answeredBy"] == "rule"


@pytest.mark.slow
def test_a_declined_2026_input_request_reaches_the_server_as_a_decline() -> None:
    rules = Rules.from_options(handle_elicitation="decline")
    result, requests, _ = _call(ASK_NAME, rules, "2026-07-28", "greet", {"greeting": "Hello"})
    assert requests[0]["result"] == {"action": "decline"}
    assert result["isError"] is True and "decline" in result["content"][0]["text"]


def test_decline_defaults() -> None:
    assert decline("elicitation/create").result == {"action": "decline"}
    assert decline("sampling/createMessage").error == {
        "code": -1,
        "message": "User rejected sampling request",
    }
    assert decline("x/y").error is not None and decline("x/y").error["code"] == -32601  # type: ignore[index]
