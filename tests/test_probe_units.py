"""`mcptape probe` in process: verdict comparison, scenario selection, the probe's answers to the
server, the report formats, and the client core's batch request."""

from __future__ import annotations

import asyncio
import io
import json
import xml.etree.ElementTree as ET
from typing import Any

import jsonschema
import orjson
import pytest

from mcptape.client.core import ClientCore
from mcptape.client.errors import ClientError, RequestTimeout
from mcptape.probe.answers import ROOT_URI, SAMPLED, ProbeAnswers, form_content
from mcptape.probe.compare import breaks, differences
from mcptape.probe.context import FAIL, NOT_OFFERED, PASS
from mcptape.probe.report import as_json, as_sarif, summary, write_junit, write_table
from mcptape.probe.runner import ProbeReport, Result
from mcptape.probe.scenarios import SCENARIOS, select
from mcptape.wire.frame import Frame

# server-everything's trigger-elicitation-request form, in part: every kind of field it asks.
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "check": {"type": "boolean"},
        "firstLine": {"type": "string", "default": "It was a dark and stormy night."},
        "email": {"type": "string", "format": "email"},
        "homepage": {"type": "string", "format": "uri"},
        "birthdate": {"type": "string", "format": "date"},
        "integer": {"type": "integer", "minimum": 1, "maximum": 100},
        "number": {"type": "number", "minimum": 0, "maximum": 1000},
        "pick": {"type": "string", "enum": ["Monica", "Rachel"]},
        "many": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["Guitar", "Piano"]}},
        "titled": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}]},
        "titledMany": {"type": "array", "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}]}},
    },
    "required": ["name"],
}


def test_a_difference_breaks_when_the_proxy_does_worse() -> None:
    assert breaks(FAIL, PASS) and breaks(FAIL, NOT_OFFERED) and breaks(NOT_OFFERED, PASS)
    # Passing what the direct connection cannot (HTTP-only scenarios) breaks nothing, nor does
    # a failure the server has anyway.
    assert not breaks(PASS, NOT_OFFERED) and not breaks(PASS, FAIL) and not breaks(NOT_OFFERED, FAIL)
    assert not any(breaks(s, s) for s in (PASS, FAIL, NOT_OFFERED))


def test_select_by_glob_and_refuse_a_pattern_that_matches_nothing() -> None:
    assert [s.id for s in select(["initialize-*"])] == [
        "initialize-2024-11-05",
        "initialize-2025-03-26",
        "initialize-2025-06-18",
        "initialize-2025-11-25",
    ]
    assert "large-16mib" not in {s.id for s in select(skip=["large-*"])}
    assert len(select()) == len(SCENARIOS)
    with pytest.raises(ValueError, match="no scenario matches 'samplng'"):
        select(["samplng"])


def test_scenario_ids_are_unique_and_fit_the_table() -> None:
    ids = [s.id for s in SCENARIOS]
    assert len(ids) == len(set(ids))
    assert max(map(len, ids)) <= 22


def test_the_filled_in_form_satisfies_its_schema() -> None:
    content = form_content(FORM)
    assert set(content) == set(FORM["properties"])
    jsonschema.Draft202012Validator(FORM, format_checker=jsonschema.FormatChecker()).validate(content)
    assert content["firstLine"] == "It was a dark and stormy night."  # a default is kept


def test_answers_are_recognisable_and_counted() -> None:
    answers = ProbeAnswers()
    sampled = answers("sampling/createMessage", {"messages": []}, "trigger-sampling-request")
    assert sampled.result["content"]["text"] == SAMPLED
    assert answers("elicitation/create", {"mode": "url", "url": "https://x"}, None).result == {
        "action": "accept"
    }
    form = answers("elicitation/create", {"requestedSchema": FORM}, None).result
    assert form["action"] == "accept" and form["content"]["name"] == "mcptape probe"
    assert answers("roots/list", None, None).result == {"roots": [{"uri": ROOT_URI, "name": "probe"}]}
    assert answers("something/else", None, None).error["code"] == -32601
    assert (
        answers.count("elicitation/create", "url") == 1 and answers.count("elicitation/create", "form") == 1
    )


def _result(index: int, status: str, detail: str, seconds: float = 1.0) -> Result:
    return Result(SCENARIOS[index], status, detail, seconds, "2025-11-25", None)


def _reports() -> tuple[ProbeReport, ProbeReport]:
    hostile = "\x1b]0;owned\x07 and a very long detail " + "x" * 200 + "\u202e"
    proxy = ProbeReport(
        "http://127.0.0.1:1/mcp",
        [
            _result(0, PASS, "initialize -> 2024-11-05"),
            _result(1, FAIL, hostile),
            _result(2, NOT_OFFERED, "no"),
        ],
    )
    direct = ProbeReport(
        "node server.js",
        [_result(0, PASS, "same"), _result(1, PASS, "fine"), _result(2, NOT_OFFERED, "no")],
    )
    return proxy, direct


def test_table_fits_80_columns_and_escapes_what_the_server_said() -> None:
    proxy, direct = _reports()
    out = io.StringIO()
    write_table(out, proxy, None, None)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()
    assert lines[-1] == "1 pass, 1 fail, 1 not offered of 3 scenarios"
    diffs = differences(proxy, direct)
    out = io.StringIO()
    write_table(out, proxy, diffs, direct)
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines[2:-1]] == [SCENARIOS[1].id]  # only what differs
    assert "BREAKS fail" in lines[2]
    assert lines[-1] == f"the proxy breaks 1 of 3 scenarios: {SCENARIOS[1].id}"


def test_json_keeps_every_word_and_says_ok() -> None:
    proxy, direct = _reports()
    body = as_json(proxy, None, None)
    assert body["ok"] is False and body["summary"] == {PASS: 1, FAIL: 1, NOT_OFFERED: 1}
    assert body["scenarios"][1]["detail"].startswith("\x1b]0;owned")
    diffs = differences(proxy, direct)
    body = as_json(proxy, diffs, direct)
    assert body["differences"] == [
        {
            "id": SCENARIOS[1].id,
            "proxy": FAIL,
            "direct": PASS,
            "breaks": True,
            "detail": proxy.results[1].detail,
        }
    ]
    orjson.dumps(body)


def test_junit_is_valid_xml_whatever_the_server_said() -> None:
    proxy, direct = _reports()
    out = io.StringIO()
    write_junit(out, proxy, None, None)
    suite = ET.fromstring(out.getvalue().split("\n", 1)[1])
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    out = io.StringIO()
    write_junit(out, proxy, differences(proxy, direct), direct)
    suite = ET.fromstring(out.getvalue().split("\n", 1)[1])
    failure = next(suite.iter("failure"))
    assert failure.get("message", "").startswith("the proxy breaks it: fail through the proxy, pass directly")


def test_sarif_has_a_rule_and_a_result_per_scenario() -> None:
    proxy, direct = _reports()
    log = as_sarif(proxy, None, None)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [s.id for s in SCENARIOS[:3]]
    assert [(r["kind"], r["level"]) for r in run["results"]] == [
        ("pass", "none"),
        ("fail", "error"),
        ("notApplicable", "none"),
    ]
    against = as_sarif(proxy, differences(proxy, direct), direct)["runs"][0]["results"]
    assert [r["kind"] for r in against] == ["pass", "fail", "pass"]
    json.dumps(log)


def test_summary_when_nothing_differs() -> None:
    proxy, _ = _reports()
    assert summary(proxy, []) == "no difference in 3 scenarios"


async def _answer_batch(core: ClientCore, sent: list[bytes], reply: Any) -> None:
    while not sent:
        await asyncio.sleep(0)
    ids = [m["id"] for m in orjson.loads(sent[0])]
    core.on_frame(Frame(orjson.dumps(reply(ids)), "s2c"))


def test_request_batch_sends_one_array_and_takes_a_batch_answer() -> None:
    async def main() -> list[Any]:
        sent: list[bytes] = []

        async def send(data: bytes) -> None:
            sent.append(data)

        core = ClientCore(send)
        answer = asyncio.ensure_future(
            _answer_batch(
                core,
                sent,
                lambda ids: [
                    {"jsonrpc": "2.0", "id": ids[1], "error": {"code": -32601, "message": "nope"}},
                    {"jsonrpc": "2.0", "id": ids[0], "result": {}},
                ],
            )
        )
        outcomes = await core.request_batch([("ping", None), ("tools/list", None)], limit=5)
        await answer
        assert [m["method"] for m in orjson.loads(sent[0])] == ["ping", "tools/list"]
        return outcomes

    outcomes = asyncio.run(main())
    assert outcomes[0] == {}
    assert isinstance(outcomes[1], ClientError) and outcomes[1].code == -32601


def test_request_batch_times_out_each_request_unanswered() -> None:
    async def main() -> list[Any]:
        async def send(data: bytes) -> None:
            return None

        return await ClientCore(send).request_batch([("ping", None)], limit=0.05)

    (outcome,) = asyncio.run(main())
    assert isinstance(outcome, RequestTimeout)
