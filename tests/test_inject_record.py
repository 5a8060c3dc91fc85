"""Injection through `mcptape record`: real servers, the real Python SDK client, a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE, everything_server_cmd
from tests.helpers.scenarios import SAMPLE, TRIP_PLANNER, record_params, text_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def everything() -> list[str]:
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run `cd tests/npm && npm ci`"
    return server


def test_sampling_and_elicitation_are_answered_by_mcptape_for_a_client_without_handlers(
    db_path: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.json"
    weather = {**SAMPLE, "content": {"type": "text", "text": "sunny, from the rules file"}}
    rule = {
        "method": "sampling/createMessage",
        "tool": "trigger-sampling-*",
        "contains": "weather",
        "result": weather,
    }
    rules.write_text(json.dumps([rule]))
    params = record_params(
        db_path,
        everything(),
        "--inject",
        str(rules),
        "--handle-sampling",
        json.dumps(SAMPLE),
        "--handle-elicitation",
        "auto",
        "--declare-capabilities",
    )

    async def main() -> tuple[str, str, str]:
        # No sampling or elicitation callback: the client could not answer these itself.
        async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
            forecast = await client.call_tool(
                "trigger-sampling-request", {"prompt": "weather?", "maxTokens": 5}
            )
            elicited = await client.call_tool("trigger-elicitation-request", {})
            return text_of(sampled), text_of(forecast), text_of(elicited)

    sampled, forecast, elicited = asyncio.run(main())
    assert "canned by mcptape" in sampled and "tape-model" in sampled
    assert "sunny, from the rules file" in forecast  # the file's rule matched tool and content first
    assert "It was a dark and stormy night." in elicited  # the form's default, accepted by `auto`
    assert "accept" in elicited

    answered = query(
        db_path, "select method, answered_by, is_error from server_requests order by request_seq"
    )
    assert answered == [
        ("sampling/createMessage", "proxy", 0),
        ("sampling/createMessage", "proxy", 0),
        ("elicitation/create", "proxy", 0),
    ]
    # The server's request is recorded as not forwarded, the answer as written by mcptape.
    requests = query(
        db_path,
        "select origin, json_extract(meta, '$.forwarded') from frames "
        "where direction = 's2c' and method in ('sampling/createMessage', 'elicitation/create')",
    )
    assert requests == [("server", 0)] * 3
    answers = query(
        db_path,
        "select text from frames where direction = 'c2s' and origin = 'proxy' and text like '%tape-model%' "
        "order by seq",
    )
    assert [json.loads(a)["result"] for (a,) in answers] == [SAMPLE, weather]
    # The handshake forwarded declares what the client did not: a proxy edit beside the original.
    handshake = query(
        db_path,
        "select origin, text from frames where method = 'initialize' and kind = 'request' order by seq",
    )
    assert [o for o, _ in handshake] == ["client", "proxy"]
    assert "sampling" not in json.loads(handshake[0][1])["params"]["capabilities"]
    declared = json.loads(handshake[1][1])["params"]["capabilities"]
    assert "sampling" in declared and "elicitation" in declared


async def _client_sampling(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="from the client"), model="client-model"
    )


async def _client_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///client/root")])


def test_without_a_matching_rule_the_client_answers_as_before(db_path: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps([{"method": "sampling/createMessage", "tool": "not-this-tool", "result": SAMPLE}])
    )
    params = record_params(
        db_path,
        everything(),
        "--inject",
        str(rules),
        "--roots",
        "file:///from/mcptape=tape",
        "--name",
        "mixed",
    )

    async def main() -> tuple[str, str]:
        async with Client(
            params,
            mode="legacy",
            read_timeout_seconds=30,
            sampling_callback=_client_sampling,
            list_roots_callback=_client_roots,
        ) as client:
            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
            listed = await client.call_tool("get-roots-list", {})
            return text_of(sampled), text_of(listed)

    sampled, listed = asyncio.run(main())
    assert "from the client" in sampled
    assert "file:///from/mcptape" in listed and "file:///client/root" not in listed
    answered = dict(query(db_path, "select method, answered_by from server_requests"))
    assert answered == {"sampling/createMessage": "client", "roots/list": "proxy"}


def test_2026_input_required_rounds_are_answered_and_retried_by_mcptape(db_path: Path) -> None:
    params = record_params(
        db_path,
        TRIP_PLANNER,
        "--handle-sampling",
        json.dumps(SAMPLE),
        "--handle-elicitation",
        '{"action": "accept", "content": {"name": "Ada"}}',
        "--roots",
        "file:///trips",
        "--declare-capabilities",
    )

    async def main() -> tuple[str, str]:
        async with Client(params, read_timeout_seconds=30) as client:
            result = await client.call_tool("plan_trip", {"city": "Oslo"})
            return client.protocol_version, text_of(result)

    version, text = asyncio.run(main())
    assert version == "2026-07-28"
    assert text == "Ada goes to Oslo: canned by mcptape [tape-model] roots=file:///trips"

    answered = query(db_path, "select method, answered_by, style from server_requests order by method")
    assert answered == [
        ("elicitation/create", "proxy", "input_required"),
        ("roots/list", "proxy", "input_required"),
        ("sampling/createMessage", "proxy", "input_required"),
    ]
    calls = query(
        db_path,
        "select seq, origin, rpc_id, text, json_extract(meta, '$.forwarded') from frames "
        "where (method = 'tools/call' and direction = 'c2s') or (direction = 's2c' and text like '%resultType%' "
        "and text not like '%\"tools\":%') order by seq",
    )
    asked = [r for r in calls if "input_required" in r[3]]
    retries = [r for r in calls if r[1] == "proxy" and r[2].startswith('"mcptape-')]
    assert asked and retries
    # Every retry echoes the state of the round before it verbatim, under a new id.
    for retry in retries:
        before = [r for r in asked if r[0] < retry[0]][-1]
        state = json.loads(before[3])["result"]["requestState"]
        assert json.loads(retry[3])["params"]["requestState"] == state
    # The input_required rounds stay in the recording but never reach the client,
    # which gets one answer under its own id, written by mcptape.
    assert all(r[4] == 0 for r in asked)
    client_call = next(r for r in calls if r[1] == "client")
    to_client = [r for r in calls if r[1] == "proxy" and r[2] == client_call[2] and "complete" in r[3]]
    assert len(to_client) == 1
    # The client's frame that --declare-capabilities replaced never reached the server; the
    # views still list it, unanswered (reported to the store's owner), so it is left out here.
    tool_calls = query(
        db_path,
        "select tool, is_error from tool_calls where request_seq not in "
        "(select json_extract(meta, '$.replaces') from frames where meta like '%replaces%')",
    )
    assert tool_calls == [("plan_trip", 0)]


def test_bad_template_is_a_one_line_error_before_the_server_starts(tmp_path: Path, db_path: Path) -> None:
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    cases = [
        (["--handle-sampling", '{"role": "assistant", "model": "m"}'], ["--handle-sampling", "'content'"]),
        (["--handle-elicitation", '{"action": "accept"}'], ["--handle-elicitation", "'content'"]),
        (["--inject", str(tmp_path / "missing.json")], ["--inject", "cannot read"]),
        (["--roots", "relative/dir"], ["--roots", "not a URI"]),
        (["--declare-capabilities"], ["--declare-capabilities needs rules"]),
    ]
    for options, fragments in cases:
        argv = [*MCPTAPE, "record", "--db", str(db_path), *options, "--", *server]
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
        assert_one_line_error(proc, *fragments)
    assert not marker.exists()
    assert not db_path.exists()


async def _client_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Bo"})


def test_2026_round_answered_in_part_by_mcptape_and_in_part_by_the_client(db_path: Path) -> None:
    params = record_params(
        db_path,
        TRIP_PLANNER,
        "--handle-sampling",
        json.dumps(SAMPLE),
        "--roots",
        "file:///trips",
        "--declare-capabilities",
    )

    async def main() -> str:
        # The client answers elicitation only; mcptape answers sampling and roots.
        async with Client(
            params, read_timeout_seconds=30, elicitation_callback=_client_elicitation
        ) as client:
            return text_of(await client.call_tool("plan_trip", {"city": "Oslo"}))

    assert asyncio.run(main()) == "Bo goes to Oslo: canned by mcptape [tape-model] roots=file:///trips"
    # The questions as the server asked them (the view also lists mcptape's trimmed copy).
    answered = query(
        db_path,
        "select s.method, s.answered_by from server_requests as s join frames as f "
        "on f.session_id = s.session_id and f.seq = s.request_seq where f.origin = 'server' order by s.method",
    )
    assert answered == [
        ("elicitation/create", "client"),
        ("roots/list", "proxy"),
        ("sampling/createMessage", "proxy"),
    ]
