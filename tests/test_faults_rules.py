"""Fault rules (pure): the flag and file syntax, the one-line refusals, matching and the seeded draw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcptape.rules.faults import FaultError, FaultSet, from_options, parse_flag, read_file


def test_a_flag_gives_method_tool_action_probability_and_seed() -> None:
    rule = parse_flag("tools/call:search=delay:500,p=0.25,seed=7", "--fault")
    assert (rule.method, rule.tool, rule.action, rule.arg, rule.p, rule.seed, rule.on) == (
        "tools/call",
        "search",
        "delay",
        500,
        0.25,
        7,
        "response",
    )
    assert rule.label == "delay:500"


def test_error_and_timeout_act_on_the_request_the_others_on_its_response() -> None:
    assert parse_flag("tools/call=error:-32603", "f").on == "request"
    assert parse_flag("tools/call=timeout", "f").on == "request"
    assert parse_flag("tools/call=drop", "f").on == "response"
    assert parse_flag("tools/call=drop,on=request", "f").on == "request"


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("tools/cal=drop", "unknown method 'tools/cal'; did you mean 'tools/call'?"),
        ("notifications/progres=reorder", "did you mean 'notifications/progress'?"),
        ("tools/call=dorp", "unknown action 'dorp'; did you mean 'drop'?"),
        ("tools/call=delay", "delay needs milliseconds"),
        ("tools/call=delay:-5", "delay needs milliseconds"),
        ("tools/call=error:x", "error needs a JSON-RPC error code"),
        ("tools/call=drop:3", "drop takes no argument"),
        ("tools/call=drop,p=2", "'p' must be a number from 0 to 1"),
        ("tools/call=drop,p=half", "p='half' is not a number from 0 to 1"),
        ("tools/call=drop,seed=1.5", "seed='1.5' is not an integer"),
        ("tools/call=drop,when=now", "unknown option 'when=now'"),
        ("tools/call=error:1,on=response", "error answers a request in the peer's place"),
        ("notifications/message=timeout", "names notifications, which nobody answers"),
        ("resources/read:x=drop", "a tool name ('x') applies to tools/call only"),
        ("tools/call", "expected METHOD[:TOOL]=ACTION"),
    ],
)
def test_an_unusable_flag_is_refused_in_one_line_naming_it(flag: str, says: str) -> None:
    with pytest.raises(FaultError) as caught:
        parse_flag(flag, f"--fault {flag!r}")
    message = str(caught.value)
    assert says in message and "\n" not in message
    assert message.startswith(f"--fault {flag!r}: ")


def test_a_servers_own_method_far_from_any_known_one_is_taken_as_written() -> None:
    assert parse_flag("myapp/frobnicate=drop", "f").method == "myapp/frobnicate"


def test_a_faults_file_takes_objects_and_flag_strings(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text(
        json.dumps(
            {
                "comment": "flaky search",
                "faults": [
                    {"method": "tools/call", "tool": "search", "action": "error:-32000", "p": 0.5, "seed": 1},
                    "notifications/progress=reorder",
                ],
            }
        )
    )
    first, second = read_file(str(path))
    assert (first.tool, first.label, first.p) == ("search", "error:-32000", 0.5)
    assert (second.method, second.action) == ("notifications/progress", "reorder")
    # The file's rules are tried before the flags.
    assert [r.action for r in from_options(["tools/call=drop"], str(path)).rules] == [
        "error",
        "reorder",
        "drop",
    ]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "not valid JSON"),
        ('{"fault": []}', "unknown key 'fault'; did you mean 'faults'?"),
        ('{"faults": {}}', "expected a list of faults"),
        (
            '[{"method": "tools/call", "actoin": "drop"}]',
            "fault 1: unknown field 'actoin'; did you mean 'action'?",
        ),
        (
            '[{"method": "tools/list", "action": "drop"}, {"method": "tols/list", "action": "drop"}]',
            "fault 2:",
        ),
        ('[{"action": "drop"}]', "'method' must be a method name"),
        ("[3]", "a fault must be a JSON object"),
    ],
)
def test_an_unusable_faults_file_is_refused_naming_the_file_and_the_fault(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "f.json"
    path.write_text(content)
    with pytest.raises(FaultError) as caught:
        read_file(str(path))
    assert str(caught.value).startswith(f"--faults {path}: ") and says in str(caught.value)


def test_a_missing_faults_file_is_one_line() -> None:
    with pytest.raises(FaultError, match="cannot read the faults file"):
        read_file("/nonexistent/faults.json")


def test_a_response_matches_by_its_requests_method_and_tool() -> None:
    rule = parse_flag("tools/call:sea*=drop", "f")
    assert rule.matches("response", "tools/call", "search")
    assert rule.matches("error", "tools/call", "seal")
    assert not rule.matches("response", "tools/call", "add")
    assert not rule.matches("request", "tools/call", "search")  # on=response
    assert not rule.matches("batch", "tools/call", "search")


def test_a_pattern_matches_notifications_by_their_method() -> None:
    rule = parse_flag("notifications/*=drop", "f")
    assert rule.matches("notification", "notifications/progress", None)
    assert not rule.matches("response", "tools/call", None)


def test_the_draw_depends_on_the_seed_and_not_on_how_directions_interleave() -> None:
    def picks(seed: int, interleave: bool) -> list[int]:
        faults = FaultSet([parse_flag(f"*=drop,p=0.5,seed={seed},on=request", "f")])
        touched = []
        for n in range(200):
            if interleave:
                faults.pick("s2c", "request", "roots/list", None)  # the other way: its own count
            if faults.pick("c2s", "request", "tools/call", None) is not None:
                touched.append(n)
        return touched

    assert picks(5, False) == picks(5, True)
    assert picks(5, False) != picks(6, False)
    assert 60 < len(picks(5, False)) < 140


def test_the_first_rule_that_fires_wins() -> None:
    faults = FaultSet([parse_flag("tools/call=drop,p=0", "f"), parse_flag("tools/call=duplicate", "f")])
    fault = faults.pick("s2c", "response", "tools/call", None)
    assert fault is not None and (fault.rule.action, fault.index) == ("duplicate", 1)


def test_without_a_seed_one_is_chosen_and_kept_for_the_record() -> None:
    rule = parse_flag("tools/call=drop,p=0.5", "f")
    assert rule.describe()["seed"] == rule.seed
