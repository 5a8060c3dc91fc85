"""VS Code's mcp.json is JSON with comments and trailing commas: mcptape reads it and
wrap/unwrap edit it in place, comments kept. Both were refused as invalid JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcptape.config.edit import wrap_command
from mcptape.wire.jsontext import blank_jsonc, loads_jsonc, object_members, skip_value
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE

MCP_JSON = """{
  // Servers for this workspace. "quotes" and [brackets] in comments are not JSON.
  "inputs": [],
  "servers": {
    /* the file server */
    "files": {
      "type": "stdio",
      "command": "npx", // launched with npx
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp//x", ],
    },
    "bare": {"command": "cat" /* no args */},
  },
  "note": "http://a/*not a comment*/b",
}
"""


def test_blanking_keeps_positions_strings_and_line_feeds() -> None:
    blanked = blank_jsonc(MCP_JSON)
    assert len(blanked) == len(MCP_JSON)
    assert blanked.count("\n") == MCP_JSON.count("\n")
    assert "/tmp//x" in blanked and "http://a/*not a comment*/b" in blanked
    assert "launched" not in blanked and "brackets" not in blanked
    doc = json.loads(blanked)
    assert doc["servers"]["files"]["args"][-1] == "/tmp//x"
    assert loads_jsonc(MCP_JSON) == doc


def test_plain_json_is_read_as_it_is_and_errors_keep_their_position() -> None:
    assert loads_jsonc('{"a": "//x"}') == {"a": "//x"}
    with pytest.raises(json.JSONDecodeError) as caught:
        loads_jsonc('{\n  // c\n  "a": 1 "b"\n}')
    assert (caught.value.lineno, caught.value.colno) == (3, 10)


def test_scanners_step_over_comments() -> None:
    members = object_members(MCP_JSON)
    assert members is not None
    assert [m.key for m in members] == ["inputs", "servers", "note"]
    assert skip_value(MCP_JSON, 0) == len(MCP_JSON.rstrip())
    entry = '{"command": "cat" /* c */, // d\n "env": {}}'
    wrapped = wrap_command(entry, "mcptape", ["record", "--"])
    assert loads_jsonc(wrapped) == {"command": "mcptape", "args": ["record", "--", "cat"], "env": {}}
    assert "/* c */" in wrapped and wrapped.count("// d") == 1


def _mcptape(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_servers_lists_the_entries_of_a_commented_mcp_json(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(MCP_JSON)
    listed = _mcptape("servers", "--config", str(config), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["files"]["target"] == "npx -y @modelcontextprotocol/server-filesystem /tmp//x"
    assert rows["bare"]["target"] == "cat"


@pytest.mark.slow
def test_wrap_keeps_the_comments_and_unwrap_gives_back_the_bytes(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(MCP_JSON)
    db = tmp_path / "t.db"
    wrapped = _mcptape("wrap", str(config), "--db", str(db))
    assert wrapped.returncode == 0, wrapped.stderr
    text = config.read_text()
    for comment in ("// Servers for", "/* the file server */", "// launched with npx", "/* no args */"):
        assert text.count(comment) == 1
    doc = loads_jsonc(text)
    assert isinstance(doc, dict)
    files = doc["servers"]["files"]["args"]
    assert files[files.index("--") + 1 :] == [
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/tmp//x",
    ]
    assert doc["servers"]["bare"]["args"][-2:] == ["--", "cat"]
    listed = _mcptape("servers", "--config", str(config))
    assert listed.returncode == 0 and "invalid" not in listed.stdout, listed.stdout + listed.stderr
    unwrapped = _mcptape("unwrap", str(config))
    assert unwrapped.returncode == 0, unwrapped.stderr
    assert config.read_text() == MCP_JSON


@pytest.mark.slow
def test_a_commented_file_that_is_still_broken_is_a_one_line_error_with_its_position(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{\n  // c\n  "servers": {"a": {"command": "cat"}} "x"\n}')
    for args in (("servers", "--config", str(config)), ("wrap", str(config))):
        assert_one_line_error(_mcptape(*args), f"{config}:3:40: invalid JSON")


@pytest.mark.slow
def test_a_config_that_is_not_utf8_is_a_one_line_error_saying_so(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(b'{"mcpServers": {"a": {"command": "caf\xe9"}}}')
    assert_one_line_error(
        _mcptape("servers", "--config", str(config)),
        "is not UTF-8 text (byte 0xe9 at offset",
        "save it as UTF-8",
    )


@pytest.mark.parametrize(
    "command", [("servers", "--config"), ("record", "--upstream", "x", "--config"), ("wrap",)]
)
@pytest.mark.slow
def test_a_config_path_that_is_a_directory_is_a_one_line_error(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    assert_one_line_error(_mcptape(*command, str(tmp_path)), f"config file {tmp_path} is a directory")
