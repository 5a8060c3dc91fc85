"""Injection rules (mcptape.rules.rules) and their CLI options, with plain values."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from mcptape.cli.common import UserError
from mcptape.cli.rule_options import rule_options, rules_from_cli
from mcptape.rules.rules import Answer, RuleContext, RuleError, Rules, auto_form, auto_result

SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "canned"}, "model": "m1"}
SAMPLING_PARAMS = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "What is the weather?"}}]
}


def write_rules(tmp_path: Path, rules: object) -> str:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    return str(path)


# -- flags --------------------------------------------------------------------------


def test_no_options_give_empty_rules_that_answer_nothing() -> None:
    rules = Rules.from_options()
    assert not rules
    assert rules.answer("sampling/createMessage", SAMPLING_PARAMS) is None
    assert rules.capabilities() == {}


def test_sampling_template_is_returned_as_given() -> None:
    rules = Rules.from_options(handle_sampling=json.dumps(SAMPLE))
    assert rules
    assert rules.answer("sampling/createMessage", SAMPLING_PARAMS) == Answer("result", result=SAMPLE)
    assert rules.answer("elicitation/create", {}) is None
    assert rules.capabilities() == {"sampling": {}}


def test_sampling_auto_is_a_valid_assistant_message() -> None:
    answer = Rules.from_options(handle_sampling="auto").answer("sampling/createMessage", SAMPLING_PARAMS)
    assert answer is not None and answer.kind == "result"
    assert answer.result["role"] == "assistant"
    assert answer.result["content"]["type"] == "text" and answer.result["content"]["text"]
    assert isinstance(answer.result["model"], str)


def test_sampling_reject_is_the_specs_user_rejected_error() -> None:
    answer = Rules.from_options(handle_sampling="reject").answer("sampling/createMessage", SAMPLING_PARAMS)
    assert answer == Answer("error", error={"code": -1, "message": "User rejected sampling request"})


@pytest.mark.parametrize("keyword", ["decline", "cancel"])
def test_elicitation_keywords_answer_with_that_action(keyword: str) -> None:
    answer = Rules.from_options(handle_elicitation=keyword).answer("elicitation/create", {"message": "?"})
    assert answer == Answer("result", result={"action": keyword})


def test_elicitation_auto_fills_the_form_from_its_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2},
            "age": {"type": "integer", "minimum": 18},
            "ok": {"type": "boolean"},
            "colour": {"type": "string", "enum": ["red", "green"]},
            "level": {"type": "number", "default": 2.5},
            "mail": {"type": "string", "format": "email"},
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        },
        "required": ["name", "age"],
    }
    answer = Rules.from_options(handle_elicitation="auto").answer(
        "elicitation/create", {"message": "Who?", "requestedSchema": schema}
    )
    assert answer is not None
    assert answer.result == {
        "action": "accept",
        "content": {
            "name": "xx",
            "age": 18,
            "ok": False,
            "colour": "red",
            "level": 2.5,
            "mail": "mcptape@example.com",
            "pick": "a",
        },
    }


def test_url_elicitation_auto_accepts_without_content() -> None:
    assert auto_result("elicitation/create", {"mode": "url", "url": "https://x"}) == {"action": "accept"}
    assert auto_form(None) == {}


def test_roots_flags_list_every_root_and_turn_paths_into_file_uris() -> None:
    rules = Rules.from_options(roots=["file:///work=Work", "/tmp/a b", "https://example.com/repo"])
    answer = rules.answer("roots/list", None)
    assert answer is not None
    assert answer.result == {
        "roots": [
            {"uri": "file:///work", "name": "Work"},
            {"uri": "file:///tmp/a%20b"},
            {"uri": "https://example.com/repo"},
        ]
    }
    assert rules.capabilities() == {"roots": {}}


@pytest.mark.parametrize(
    ("template", "missing"),
    [
        ({"content": {"type": "text", "text": "x"}, "model": "m"}, "'role'"),
        ({"role": "assistant", "model": "m"}, "'content'"),
        ({"role": "assistant", "content": {"type": "text", "text": "x"}}, "'model'"),
        ({"role": "assistant", "content": {"type": "text"}, "model": "m"}, "'text'"),
        ({"role": "bot", "content": {"type": "text", "text": "x"}, "model": "m"}, "'role'"),
    ],
)
def test_sampling_template_missing_a_field_names_it(template: dict[str, object], missing: str) -> None:
    with pytest.raises(RuleError) as info:
        Rules.from_options(handle_sampling=json.dumps(template))
    message = str(info.value)
    assert message.startswith("--handle-sampling: ")
    assert missing in message
    assert "\n" not in message


def test_elicitation_template_needs_action_and_content_when_accepting() -> None:
    with pytest.raises(RuleError, match=r"--handle-elicitation: .*'action'"):
        Rules.from_options(handle_elicitation='{"content": {}}')
    with pytest.raises(RuleError, match=r"--handle-elicitation: .*'content'"):
        Rules.from_options(handle_elicitation='{"action": "accept"}')
    ok = Rules.from_options(handle_elicitation='{"action": "accept", "content": {"name": "Ada"}}')
    assert ok.answer("elicitation/create", {}) == Answer(
        "result", result={"action": "accept", "content": {"name": "Ada"}}
    )


def test_flag_that_is_neither_json_nor_keyword_is_an_error() -> None:
    with pytest.raises(RuleError, match=r"--handle-sampling: expected a JSON object or one of auto, reject"):
        Rules.from_options(handle_sampling="sure")


@pytest.mark.parametrize("spec", ["relative/path", "=name", "no scheme"])
def test_roots_that_are_not_uris_are_errors(spec: str) -> None:
    with pytest.raises(RuleError, match=r"^--roots: "):
        Rules.from_options(roots=[spec])


# -- rules files ------------------------------------------------------------------------


def test_file_rules_match_on_tool_substring_and_regex_in_order(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path,
        {
            "rules": [
                {
                    "method": "sampling/createMessage",
                    "tool": "weather*",
                    "contains": "weather",
                    "result": SAMPLE,
                },
                {"method": "sampling/createMessage", "regex": "(?i)PASSWORD", "pass": True},
                {
                    "method": ["sampling/createMessage"],
                    "error": {"code": -32001, "message": "no", "data": {"a": 1}},
                },
            ]
        },
    )
    rules = Rules.from_options(inject_file=path, handle_sampling="auto")
    weather = rules.answer("sampling/createMessage", SAMPLING_PARAMS, RuleContext(tool_name="weather-now"))
    assert weather == Answer("result", result=SAMPLE)
    # The same request from another tool falls to the error rule.
    other = rules.answer("sampling/createMessage", SAMPLING_PARAMS, RuleContext(tool_name="news"))
    assert other == Answer("error", error={"code": -32001, "message": "no", "data": {"a": 1}})
    # A pass rule hands the request to the client even though a later flag would answer it.
    secret = {"messages": [{"role": "user", "content": {"type": "text", "text": "my password"}}]}
    assert rules.answer("sampling/createMessage", secret) is None


def test_file_rules_match_the_request_text_when_given(tmp_path: Path) -> None:
    path = write_rules(tmp_path, [{"method": "elicitation/create", "contains": '"id":7', "result": "auto"}])
    rules = Rules.from_options(inject_file=path)
    hit = RuleContext(request_text='{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}')
    miss = RuleContext(request_text='{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{}}')
    assert rules.answer("elicitation/create", {}, hit) == Answer(
        "result", result={"action": "accept", "content": {}}
    )
    assert rules.answer("elicitation/create", {}, miss) is None
    assert rules.capabilities() == {"elicitation": {}}


def test_pass_rules_declare_no_capability(tmp_path: Path) -> None:
    rules = Rules.from_options(inject_file=write_rules(tmp_path, [{"method": "roots/list", "pass": True}]))
    assert rules
    assert rules.capabilities() == {}


@pytest.mark.parametrize(
    ("rules", "fragment"),
    [
        ({"nope": []}, "expected a list of rules"),
        ([{"result": SAMPLE}], "rule 1: the rule has no 'method' field"),
        ([{"method": "sampling/createMessage"}], "exactly one of 'result', 'error' or 'pass'"),
        ([{"method": "roots/list", "pass": True, "error": {"code": 1, "message": "x"}}], "exactly one of"),
        ([{"method": "sampling/createMessage", "error": {"message": "x"}}], "the error has no 'code' field"),
        ([{"method": "sampling/createMessage", "result": {"role": "user"}}], "has no 'content' field"),
        ([{"method": "roots/list", "result": {"roots": [{"name": "x"}]}}], "'uri'"),
        ([{"method": "roots/list", "regex": "(", "pass": True}], "bad 'regex'"),
        ([{"method": "roots/list", "pass": True, "tolo": "x"}], "unknown field 'tolo'"),
        ([{"method": "*", "result": "auto"}], "'auto' needs exactly one method"),
        ([{"method": "roots/list", "pass": True}, "x"], "rule 2: a rule must be a JSON object"),
    ],
)
def test_bad_rules_file_names_the_file_rule_and_field(tmp_path: Path, rules: object, fragment: str) -> None:
    path = write_rules(tmp_path, rules)
    with pytest.raises(RuleError) as info:
        Rules.from_options(inject_file=path)
    message = str(info.value)
    assert message.startswith(f"--inject {path}: ")
    assert fragment in message
    assert "\n" not in message


def test_missing_or_invalid_rules_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="cannot read the rules file"):
        Rules.from_options(inject_file=str(tmp_path / "absent.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RuleError, match="not valid JSON"):
        Rules.from_options(inject_file=str(bad))


def test_other_methods_can_be_answered_from_a_file(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path, [{"method": "ping", "result": {}}, {"method": "*", "tool": "t", "result": {"x": 1}}]
    )
    rules = Rules.from_options(inject_file=path)
    assert rules.answer("ping", None) == Answer("result", result={})
    assert rules.answer("x/y", None, RuleContext(tool_name="t")) == Answer("result", result={"x": 1})
    assert rules.answer("x/y", None) is None
    assert rules.capabilities() == {"sampling": {}, "elicitation": {}, "roots": {}}


# -- 2026-07-28 input requests -------------------------------------------------------------


def test_input_requests_are_answered_when_every_one_has_a_result() -> None:
    rules = Rules.from_options(handle_sampling="auto", handle_elicitation="decline", roots=["file:///r"])
    requests = {
        "s": {"method": "sampling/createMessage", "params": SAMPLING_PARAMS},
        "e": {"method": "elicitation/create", "params": {"message": "ok?"}},
        "r": {"method": "roots/list"},
    }
    responses = rules.answer_input_requests(requests, RuleContext(tool_name="t"))
    assert responses is not None
    assert set(responses) == {"s", "e", "r"}
    assert responses["e"] == {"action": "decline"}
    assert responses["r"] == {"roots": [{"uri": "file:///r"}]}
    assert responses["s"]["role"] == "assistant"


def test_input_requests_go_to_the_client_unless_all_are_answered_with_results() -> None:
    requests = {
        "s": {"method": "sampling/createMessage", "params": SAMPLING_PARAMS},
        "e": {"method": "elicitation/create", "params": {"message": "ok?"}},
    }
    assert Rules.from_options(handle_sampling="auto").answer_input_requests(requests) is None
    # An error cannot travel in inputResponses.
    rejecting = Rules.from_options(handle_sampling="reject", handle_elicitation="auto")
    assert rejecting.answer_input_requests(requests) is None
    assert rejecting.answer_input_requests({}) is None
    assert rejecting.answer_input_requests({"x": "not a request"}) is None


def test_input_request_rules_match_the_entry_text_and_tool(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path, [{"method": "elicitation/create", "tool": "book", "contains": "seat", "result": "auto"}]
    )
    rules = Rules.from_options(inject_file=path)
    entry = {"q": {"method": "elicitation/create", "params": {"message": "Which seat?"}}}
    assert rules.answer_input_requests(entry, RuleContext(tool_name="book")) == {
        "q": {"action": "accept", "content": {}}
    }
    assert rules.answer_input_requests(entry, RuleContext(tool_name="other")) is None


# -- CLI options -------------------------------------------------------------------------------


def test_rules_from_cli_turns_rule_errors_into_user_errors() -> None:
    with pytest.raises(UserError) as info:
        rules_from_cli('{"role": "assistant"}', None, (), None)
    assert info.value.exit_code == 2
    assert "--handle-sampling" in info.value.format_message()
    assert rules_from_cli(None, "cancel", ("file:///x",), None).capabilities() == {
        "elicitation": {},
        "roots": {},
    }


def test_rule_options_pass_their_values_to_the_command() -> None:
    seen: dict[str, object] = {}

    @click.command()
    @rule_options
    def cmd(**kwargs: object) -> None:
        """Test command."""
        seen.update(kwargs)

    from click.testing import CliRunner

    result = CliRunner().invoke(cmd, ["--handle-sampling", "auto", "--roots", "file:///a", "--roots", "/b"])
    assert result.exit_code == 0, result.output
    assert seen == {
        "handle_sampling": "auto",
        "handle_elicitation": None,
        "roots": ("file:///a", "/b"),
        "inject": None,
    }


def test_some_input_requests_can_be_answered_when_not_all_are() -> None:
    requests = {
        "s": {"method": "sampling/createMessage", "params": SAMPLING_PARAMS},
        "e": {"method": "elicitation/create", "params": {"message": "ok?"}},
        "bad": "not a request",
    }
    rules = Rules.from_options(handle_sampling="reject", handle_elicitation="cancel")
    assert rules.answer_some_input_requests(requests) == {"e": {"action": "cancel"}}
    assert Rules.from_options().answer_some_input_requests(requests) == {}
    assert rules.answer_some_input_requests("nope") == {}  # type: ignore[arg-type]


def test_a_rule_for_a_misspelt_method_is_refused_naming_the_nearest(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"method": "elicitation/creat", "result": "auto"}]}))
    with pytest.raises(RuleError) as info:
        Rules.from_options(inject_file=str(rules))
    message = str(info.value)
    assert message.startswith(
        f"--inject {rules}: rule 1: 'elicitation/creat' is not a request a server sends"
    )
    assert "did you mean 'elicitation/create'?" in message and "\n" not in message
    rules.write_text(json.dumps([{"method": ["roots/list", "tools/call"], "pass": True}]))
    with pytest.raises(RuleError, match="'tools/call' is not a request a server sends a client"):
        Rules.from_options(inject_file=str(rules))
    for fine in ("*", "ping", "tasks/get", "sampling/createMessage"):
        rules.write_text(json.dumps([{"method": fine, "pass": True}]))
        assert Rules.from_options(inject_file=str(rules))
