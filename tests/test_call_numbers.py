"""`call` sends numbers as given or refuses them: integers exact, no NaN or infinity sent as null;
a nan timeout is a usage error; a tools/call result that is not an object is a protocol error."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import click
import pytest

from mcptape.cli.call import SECONDS
from mcptape.client.coerce import coerce_value
from mcptape.client.errors import ProtocolError, ValidationError, exit_status
from mcptape.client.methods import Call, perform
from mcptape.client.script import parse_script
from mcptape.proxy.links.memory import MemoryLink
from tests.helpers.fake_server import fake_session, reply
from tests.helpers.paths import MCPTAPE

NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
TOOL = {"name": "add", "inputSchema": {"type": "object", "properties": {"a": NUMBER, "b": INTEGER}}}


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("9007199254740993", NUMBER, 9007199254740993),
        ("9007199254740993", INTEGER, 9007199254740993),
        ("123456789012345678901234567890", NUMBER, 123456789012345678901234567890),
        ("9007199254740993", None, 9007199254740993),
        ("-7", NUMBER, -7),
        ("2.5", NUMBER, 2.5),
        ("1e3", INTEGER, 1000),
        ("NaN", {"type": ["number", "string"]}, "NaN"),  # a string is allowed: it is one
        ("nan", None, "nan"),  # not JSON, no schema: text, as documented
    ],
)
def test_numbers_go_out_exactly_as_given(text: str, schema: Any, value: Any) -> None:
    out = coerce_value("a", text, schema)
    assert out == value and type(out) is type(value)


@pytest.mark.parametrize("text", ["NaN", "nan", "1e400", "-inf", "Infinity", "-1.5e999"])
@pytest.mark.parametrize("schema", [NUMBER, INTEGER])
def test_what_json_cannot_carry_is_refused_for_a_number(text: str, schema: Any) -> None:
    with pytest.raises(ValidationError, match=r"no NaN or infinity|beyond"):
        coerce_value("a", text, schema)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "1e400", '{"x": NaN}', "[1, -Infinity]"])
def test_what_json_cannot_carry_is_refused_without_a_schema(text: str) -> None:
    with pytest.raises(ValidationError) as refused:
        coerce_value("a", text, None)
    assert "\n" not in refused.value.message and "--tool-arg a=" in refused.value.message


def test_scripts_refuse_nan_too() -> None:
    with pytest.raises(ValidationError, match="NaN is not JSON"):
        parse_script('[{"method": "tools/call", "toolArgs": {"a": NaN}}]')


@pytest.mark.slow
def test_json_options_refuse_numbers_past_double_range_in_one_line() -> None:
    proc = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/call", "--tool-args", '{"a": 1e400}', "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "--tool-args: not valid JSON (1e400 is beyond" in proc.stderr


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan"])
def test_a_nan_number_of_seconds_is_a_usage_error(text: str) -> None:
    with pytest.raises(click.BadParameter, match="is not a number of seconds"):
        SECONDS.convert(text, None, None)
    assert SECONDS.convert("inf", None, None) == float("inf")  # no limit: a number all the same


def _tool_server(answer: Any) -> Any:
    async def script(link: MemoryLink, message: dict[str, Any]) -> None:
        if message["method"] == "tools/list":
            await reply(link, message["id"], {"tools": [TOOL]})
        else:
            await reply(link, message["id"], answer)

    return script


def test_tool_arguments_reach_the_server_exact_and_a_nan_never_leaves() -> None:
    async def main() -> tuple[list[dict[str, Any]], BaseException | None]:
        session, seen, _ = fake_session(_tool_server({"content": []}))
        async with session:
            exact = Call(
                "tools/call", tool_name="add", tool_arg_pairs=[("a", "9007199254740993"), ("b", "2")]
            )
            await perform(session, exact)
            refused: BaseException | None = None
            try:
                await perform(session, Call("tools/call", tool_name="add", tool_arg_pairs=[("a", "NaN")]))
            except ValidationError as exc:
                refused = exc
        return seen, refused

    seen, refused = asyncio.run(asyncio.wait_for(main(), 20))
    calls = [m["params"]["arguments"] for m in seen if m["method"] == "tools/call"]
    assert calls == [{"a": 9007199254740993, "b": 2}]  # the NaN call was never sent
    assert refused is not None and exit_status(refused) == 1


@pytest.mark.parametrize("answer", ["just text", 42, ["x"], None, {"content": "not a list"}])
def test_a_tools_call_result_that_is_not_an_object_is_a_protocol_error(answer: Any) -> None:
    async def main() -> BaseException:
        session, _, _ = fake_session(_tool_server(answer))
        async with session:
            with pytest.raises(ProtocolError) as failed:
                await perform(session, Call("tools/call", tool_name="add"))
            return failed.value

    error = asyncio.run(asyncio.wait_for(main(), 20))
    assert error.category == "protocol" and exit_status(error) == 1
