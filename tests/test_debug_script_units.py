"""Pure parts of debug-script with plain values: source maps, URL matching, prediction, argv, formatting."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptape.servers.debug_script.arguments import parse_arguments
from mcptape.servers.debug_script.errors import DebugScriptError, timeout_message
from mcptape.servers.debug_script.evaluate import HitValue, escape_lone_surrogates
from mcptape.servers.debug_script.launch import inspector_port, split_command, with_inspect_brk
from mcptape.servers.debug_script.locations import HitLocation, code_lines, refusal_note, slide_allowed
from mcptape.servers.debug_script.policy import CommandPolicy
from mcptape.servers.debug_script.predict import PredictedLocation, predict_locations, search_roots
from mcptape.servers.debug_script.server import summarize
from mcptape.servers.debug_script.session import DebugOutcome, Hit
from mcptape.servers.debug_script.sourcemap import (
    Mapping,
    SourceMap,
    SourceMapError,
    decode_mappings,
    decode_vlq,
    load_source_map,
    path_from_url,
)
from mcptape.servers.debug_script.target import BreakpointTarget, url_regex
from mcptape.servers.debug_script.transport import LONE_SURROGATE_KEY, answerable_line
from tests.helpers.paths import ROOT

TS = ROOT / "tests" / "data" / "debug_script" / "ts"


@pytest.mark.parametrize(
    ("segment", "values"),
    [
        ("A", [0]),
        ("C", [1]),
        ("D", [-1]),
        ("gB", [16]),
        ("hB", [-16]),
        ("w+B", [1000]),
        ("x+B", [-1000]),
        ("AAgBC", [0, 0, 16, 1]),
        ("SAAS", [9, 0, 0, 9]),
    ],
)
def test_vlq_segment_decodes_to_signed_integers(segment: str, values: list[int]) -> None:
    assert decode_vlq(segment) == values


def encode_vlq(values: list[int]) -> str:
    """The format's encoder, written from the spec, to check the decoder against."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = []
    for value in values:
        number = (-value << 1) | 1 if value < 0 else value << 1
        while True:
            digit, number = number & 31, number >> 5
            out.append(alphabet[digit | (32 if number else 0)])
            if not number:
                break
    return "".join(out)


@given(st.lists(st.integers(min_value=-(2**40), max_value=2**40), min_size=1, max_size=6))
def test_vlq_decoding_inverts_encoding(values: list[int]) -> None:
    assert decode_vlq(encode_vlq(values)) == values


@pytest.mark.parametrize("segment", ["A!", "g"])
def test_invalid_or_truncated_vlq_is_rejected(segment: str) -> None:
    with pytest.raises(SourceMapError):
        decode_vlq(segment)


def test_mappings_carry_source_and_original_deltas_across_lines() -> None:
    # Line 0: col 0 -> src 0 line 0 col 0; col 4 -> line 0 col 2. Line 1 (column restarts): col 2 -> line 1 col 2.
    assert decode_mappings("AAAA,IAAE;EACA") == [
        Mapping(0, 0, 0, 0, 0),
        Mapping(0, 4, 0, 0, 2),
        Mapping(1, 2, 0, 1, 2),
    ]


def test_empty_lines_and_one_field_segments_keep_line_numbers() -> None:
    assert decode_mappings(";;C,AAAA") == [Mapping(2, 1), Mapping(2, 1, 0, 0, 0)]


def test_typescript_line_maps_to_its_generated_position() -> None:
    source_map = SourceMap.parse((TS / "out" / "test.js.map").read_text(), str(TS / "out"))
    assert source_map.sources == [str(TS / "src" / "test.ts")]
    # src/test.ts line 9 (`return Math.sqrt(squared)`) is out/test.js line 3, column 4.
    assert source_map.generated_position(0, 8) == (2, 4)


def test_line_without_code_slides_to_the_next_line_that_has_some() -> None:
    source_map = SourceMap.parse((TS / "out" / "test.js.map").read_text(), str(TS / "out"))
    # Lines 1-6 are a comment and an interface: the first code is `function norm` on line 7.
    assert source_map.generated_position(0, 1) == (0, 0)
    assert source_map.generated_position(0, 500) is None


def test_source_root_and_absolute_file_urls_resolve_to_paths() -> None:
    text = json.dumps(
        {"version": 3, "sourceRoot": "../src/", "sources": ["a.ts", "file:///abs/b.ts"], "mappings": ""}
    )
    assert SourceMap.parse(text, "/proj/dist").sources == ["/proj/src/a.ts", "/abs/b.ts"]


def test_index_map_sections_are_offset() -> None:
    section = {"version": 3, "sources": ["a.ts"], "mappings": "AAAA,EAAC"}
    text = json.dumps({"version": 3, "sections": [{"offset": {"line": 10, "column": 5}, "map": section}]})
    source_map = SourceMap.parse(text, "/p")
    assert source_map.mappings == [Mapping(10, 5, 0, 0, 0), Mapping(10, 7, 0, 0, 1)]


def test_inline_base64_and_percent_encoded_data_urls_load() -> None:
    payload = json.dumps({"version": 3, "sources": ["x.ts"], "mappings": "AAAA"})
    inline = "data:application/json;charset=utf-8;base64," + base64.b64encode(payload.encode()).decode()
    assert load_source_map(inline, "file:///p/dist/x.js") == SourceMap(
        ["/p/dist/x.ts"], [Mapping(0, 0, 0, 0, 0)]
    )
    escaped = "data:application/json," + payload.replace(" ", "%20")
    assert load_source_map(escaped, "/p/dist/x.js") == SourceMap(["/p/dist/x.ts"], [Mapping(0, 0, 0, 0, 0)])


def test_map_file_is_read_next_to_the_script_and_missing_ones_are_none() -> None:
    loaded = load_source_map("test.js.map", (TS / "out" / "test.js").as_uri())
    assert loaded is not None and loaded.sources == [str(TS / "src" / "test.ts")]
    assert load_source_map("absent.js.map", (TS / "out" / "test.js").as_uri()) is None
    assert load_source_map("https://example.invalid/x.map", "/p/x.js") is None


def test_file_urls_are_decoded_to_paths() -> None:
    assert path_from_url("file:///a%20b/c.js") == "/a b/c.js"
    assert path_from_url("/plain/path.js") == "/plain/path.js"
    assert path_from_url("node:internal/x") is None


def test_url_regex_matches_the_path_and_the_file_url_and_nothing_else() -> None:
    pattern = re.compile(url_regex({"/w/a b/é(1).js"}))
    assert pattern.match("/w/a b/é(1).js")
    assert pattern.match("file:///w/a%20b/%C3%A9%281%29.js")
    assert pattern.match("file:///w/a%20b/%c3%a9(1).js")
    assert not pattern.match("/w/a b/é(1).jsx")
    assert not pattern.match("/x/w/a b/é(1).js")
    assert not pattern.match("/w/a_b/é(1).js")


@pytest.mark.slow
def test_url_regex_is_valid_javascript(node: str) -> None:
    pattern = url_regex({"/w/a b/x.js"})
    script = f"const r = new RegExp({json.dumps(pattern)}); console.log([r.test('file:///w/a%20b/x.js'), r.test('/w/a b/x.js'), r.test('/w/x.js')].join())"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.strip() == "true,true,false"


def test_breakpoint_target_names_its_script_by_path_or_url(tmp_path: Path) -> None:
    target = BreakpointTarget(str(tmp_path / "sub" / ".." / "t.js"), 3)
    assert target.path == str(tmp_path / "t.js")
    assert target.line0 == 2
    assert target.names_script((tmp_path / "t.js").as_uri())
    assert target.names_script(str(tmp_path / "t.js"))
    assert not target.names_script((tmp_path / "u.js").as_uri())


def test_mapped_location_distinguishes_unmapped_scripts_from_lines_without_code() -> None:
    target = BreakpointTarget(str(TS / "src" / "test.ts"), 9)
    script = (TS / "out" / "test.js").as_uri()
    mapped = target.mapped_location(script, "test.js.map")
    assert mapped is not None and mapped.position == (2, 4)
    assert target.mapped_location(script, "") is None
    assert BreakpointTarget(str(TS / "src" / "other.ts"), 9).mapped_location(script, "test.js.map") is None
    beyond = BreakpointTarget(str(TS / "src" / "test.ts"), 500).mapped_location(script, "test.js.map")
    assert beyond is not None and beyond.position is None


def test_prediction_finds_external_and_inline_maps_and_skips_node_modules(tmp_path: Path) -> None:
    shutil.copytree(TS, tmp_path / "ts")
    hidden = tmp_path / "ts" / "node_modules" / "pkg"
    shutil.copytree(TS / "out", hidden)
    (hidden / "test.js.map").write_text(
        (TS / "out" / "test.js.map").read_text().replace("../src", "../../src")
    )
    candidates = {str(tmp_path / "ts" / "src" / "test.ts")}
    found = predict_locations(candidates, 8, [str(tmp_path)])
    assert sorted(found, key=lambda location: location.script) == [
        PredictedLocation(str(tmp_path / "ts" / "out-inline" / "test.js"), 2, 4),
        PredictedLocation(str(tmp_path / "ts" / "out" / "test.js"), 2, 4),
    ]


def test_search_roots_are_the_script_folder_then_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "main.js").write_text("")
    assert search_roots(["node", "--inspect-brk=0", "dist/main.js"], str(tmp_path)) == [
        str(tmp_path / "dist"),
        str(tmp_path),
    ]
    assert search_roots(["node", str(tmp_path / "dist" / "main.js")], str(tmp_path / "dist")) == [
        str(tmp_path / "dist")
    ]


def test_command_is_split_like_a_shell_without_one() -> None:
    assert split_command("node --inspect-brk=9229 './my script.js' \"a b\" $HOME") == [
        "node",
        "--inspect-brk=9229",
        "./my script.js",
        "a b",
        "$HOME",
    ]


@pytest.mark.parametrize("command", ["", "   ", "node 'unclosed"])
def test_empty_or_unbalanced_command_is_an_error(command: str) -> None:
    with pytest.raises(DebugScriptError):
        split_command(command)


@pytest.mark.parametrize(
    ("argv", "port"),
    [
        (["node", "--inspect-brk=9300", "x.js"], 9300),
        (["node", "--inspect-brk=127.0.0.1:9301", "x.js"], 9301),
        (["node", "--inspect-brk=[::1]:9302", "x.js"], 9302),
        (["node", "--inspect-brk", "x.js"], 9229),
        (["node", "x.js"], 9229),
        (["node", "--inspect-brk=0", "x.js"], 0),
    ],
)
def test_inspector_port_comes_from_inspect_brk_else_9229(argv: list[str], port: int) -> None:
    assert inspector_port(argv) == port


def test_inspect_brk_is_added_only_to_a_plain_node_command() -> None:
    assert with_inspect_brk(["node", "x.js"]) == ["node", "--inspect-brk=0", "x.js"]
    assert with_inspect_brk(["/usr/bin/node", "x.js"]) == ["/usr/bin/node", "--inspect-brk=0", "x.js"]
    assert with_inspect_brk(["node", "--inspect-brk=9229", "x.js"]) == ["node", "--inspect-brk=9229", "x.js"]
    assert with_inspect_brk(["npm", "run", "debug"]) == ["npm", "run", "debug"]


@pytest.mark.parametrize("flag", ["--inspect", "--inspect=0", "--inspect=127.0.0.1:9229"])
def test_inspect_without_brk_is_refused_with_the_flag_to_use(flag: str) -> None:
    with pytest.raises(DebugScriptError) as caught:
        with_inspect_brk(["node", flag, "x.js"])
    assert caught.value.message.startswith(f"{flag} starts the inspector but lets the script run")
    assert f"use {flag.replace('--inspect', '--inspect-brk')} instead" in caught.value.message


def test_timeout_message_has_no_spurious_decimal() -> None:
    assert timeout_message(2000.0) == "Timeout waiting for breakpoint after 2000 ms"
    assert timeout_message(1500.5) == "Timeout waiting for breakpoint after 1500.5 ms"


def test_hit_json_puts_the_location_beside_type_and_value() -> None:
    hit = Hit(HitValue("bigint", "10n", described=True, truncated=5), HitLocation(5, 3, "f"))
    assert hit.as_json() == {
        "type": "bigint",
        "value": "10n",
        "line": 5,
        "column": 3,
        "function": "f",
        "truncated": 5,
    }
    assert list(hit.as_json())[:2] == ["type", "value"]


def test_summary_is_one_line_without_the_values_plus_notes() -> None:
    hits = [Hit(HitValue("string", "secret-value"), HitLocation(4, 3, "")) for _ in range(2)]
    outcome = DebugOutcome("/p/t.js:3", "i", hits, True, "stopped", ["Line 3 holds no code; ..."])
    assert summarize(outcome) == (
        "2 hits at /p/t.js:3 (line 4); the timeout elapsed and the process was stopped. "
        "The values are in structuredContent.results.\nLine 3 holds no code; ..."
    )
    cut = DebugOutcome(
        "/p/t.js:3",
        "i",
        [Hit(HitValue("string", "a", truncated=9), HitLocation(3, 1, ""))],
        False,
        "status 0",
    )
    assert "1 value was cut (see `truncated`; raise max_value_length" in summarize(cut)


def test_code_lines_skip_blank_comment_and_bracket_only_lines() -> None:
    source = 'a();\n\n// note\n/* one\n two */ b();\n  });\n`x\ny`;\n"s"; // c\n'
    assert code_lines(source) == [True, False, False, False, True, False, True, True, True, False]


def test_a_pause_counts_on_its_line_or_after_lines_without_code_only() -> None:
    code = [True, False, False, True, True]
    assert slide_allowed(code, 0, 0)
    assert slide_allowed(code, 1, 3)  # lines 1-2 hold no code
    assert not slide_allowed(code, 0, 3)  # line 0 holds code: V8 left it
    assert not slide_allowed(code, 3, 1)  # never backwards
    assert not slide_allowed(None, 1, 3)  # no source text: only the same line


def test_refusal_note_names_the_code_that_was_skipped() -> None:
    note = refusal_note(2, HitLocation(5, 13, "called"), [True, True, True, True, True])
    assert note.startswith(
        "V8 placed the breakpoint for line 2 at line 5, column 13, in called(), past the code on line 2"
    )


def test_reverse_lookup_finds_the_mapping_covering_a_generated_position() -> None:
    source_map = SourceMap(["a.ts"], decode_mappings("AAAA,UAAE;AACA"))
    covering = source_map.original_position(0, 12)
    assert covering is not None and (covering.original_line, covering.original_column) == (0, 2)
    assert source_map.original_position(5, 0) is None
    assert source_map.landing(0, 1) == (1, 0, 1)


def test_a_map_without_the_file_name_is_not_decoded(tmp_path: Path) -> None:
    (tmp_path / "x.js.map").write_text('{"version": 3, "sources": ["other.ts"], "mappings": "!!!"}')
    assert load_source_map("x.js.map", str(tmp_path / "x.js"), frozenset({b"test.ts"})) is None


@pytest.mark.parametrize(
    ("argv", "policy", "allowed"),
    [
        (["node", "x.js"], CommandPolicy(), True),
        (["/opt/node20/bin/nodejs", "x.js"], CommandPolicy(), True),
        (["npx", "tsx", "x.ts"], CommandPolicy(), False),
        (["npx", "tsx", "x.ts"], CommandPolicy(frozenset({"npx"})), True),
        (["/usr/bin/env", "node"], CommandPolicy(frozenset({"env"})), True),
        (["/tmp/env", "node"], CommandPolicy(frozenset({"/usr/bin/env"})), False),
        (["bash", "-c", "x"], CommandPolicy(allow_any=True), True),
    ],
)
def test_only_node_runs_unless_the_server_allows_more(
    argv: list[str], policy: CommandPolicy, allowed: bool
) -> None:
    if allowed:
        policy.check(argv)
    else:
        with pytest.raises(DebugScriptError, match=r"^Refusing to run"):
            policy.check(argv)


def test_arguments_are_checked_into_a_request() -> None:
    request = parse_arguments(
        {
            "command": "node x.js",
            "breakpoint": '{"file": "x.js", "line": 3.0}',
            "expression": "i",
            "timeout": 5,
            "max_value_length": 7,
        }
    )
    assert (request.file, request.line, request.timeout_ms, request.max_value_length) == ("x.js", 3, 5.0, 7)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "arguments must be an object with command, breakpoint, expression, timeout; got a list."),
        ({"command": "node"}, "missing required arguments breakpoint, expression, timeout;"),
        (
            {"command": "node", "breakpoint": {"file": "x", "line": True}, "expression": "i", "timeout": 1},
            "breakpoint.line must be a whole number (1-based, as editors show lines); got the boolean true.",
        ),
        (
            {
                "command": "node",
                "breakpoint": {"file": "x", "line": 1},
                "expression": "i",
                "timeout": float("nan"),
            },
            "timeout must be a positive number of milliseconds, e.g. 5000; got nan.",
        ),
        (
            {
                "command": "node",
                "breakpoint": {"file": "x", "line": 1, "col": 2},
                "expression": "i",
                "timeout": 1,
            },
            "breakpoint has unknown field 'col': expected only file and line.",
        ),
        (
            {
                "command": "node",
                "breakpoint": {"file": "x\ud800", "line": 1},
                "expression": "i",
                "timeout": 1,
            },
            "breakpoint.file holds a lone UTF-16 surrogate",
        ),
    ],
)
def test_bad_arguments_get_one_sentence(arguments: object, message: str) -> None:
    with pytest.raises(DebugScriptError) as caught:
        parse_arguments(arguments)
    assert caught.value.message.startswith(message)
    assert "\n" not in caught.value.message


def test_lone_surrogates_are_escaped_in_strings_keys_and_nesting_and_pairs_are_kept() -> None:
    value = {"k\ud83d": ["\udc00x", "\U0001f600"], "n": 1}
    assert escape_lone_surrogates(value) == ({"k\\ud83d": ["\\udc00x", "\U0001f600"], "n": 1}, True)
    assert escape_lone_surrogates("plain é") == ("plain é", False)


def test_a_request_line_with_a_lone_surrogate_becomes_answerable() -> None:
    line = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        '"params": {"name": "debug-script", "arguments": {"expression": "\\ud83d"}}}\n'
    )
    rewritten = json.loads(answerable_line(line))
    assert rewritten["id"] == 7
    assert rewritten["params"]["arguments"] == {"expression": "\ufffd", LONE_SURROGATE_KEY: "expression"}
    paired = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\\ud83d\\ude00"}}'
    assert answerable_line(paired) == paired
