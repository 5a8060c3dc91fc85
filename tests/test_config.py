"""mcpServers config files and the upstream registry (mcptape.config.registry)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from mcptape.config.registry import (
    ConfigError,
    UpstreamSpec,
    builtin_upstreams,
    default_client_config_path,
    known_upstreams,
    load_config,
    parse_entry,
    read_registry,
    resolve_upstream,
)
from tests.helpers.paths import ROOT

CONFIGS = ROOT / "tests" / "data" / "configs"
CLAUDE = CONFIGS / "claude_desktop_config.json"


def write_config(tmp_path: Path, servers: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_load_config_gives_every_entry_in_file_order() -> None:
    specs = load_config(CLAUDE)
    assert list(specs) == ["filesystem", "git", "notes", "weather-local", "linear", "legacy-sse"]
    assert specs["filesystem"] == UpstreamSpec(
        name="filesystem",
        transport="stdio",
        command=[
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/Users/alice/Desktop",
            "/Users/alice/Downloads",
        ],
    )


def test_stdio_entry_keeps_env_and_cwd() -> None:
    notes = load_config(CLAUDE)["notes"]
    assert notes.command == ["node", "build/index.js", "--vault", "Personal Notes"]
    assert notes.env == {"NOTES_API_KEY": "sk-test-0000", "LOG_LEVEL": "debug"}
    assert notes.cwd == "/Users/alice/src/notes-mcp"


def test_entry_without_args_runs_the_bare_command() -> None:
    assert load_config(CLAUDE)["weather-local"].command == ["/Users/alice/bin/weather-mcp"]


def test_remote_entries_map_their_type_to_a_transport() -> None:
    specs = load_config(CLAUDE)
    assert specs["linear"].transport == "http"
    assert specs["linear"].headers == {"Authorization": "Bearer lin_api_0000"}
    assert specs["legacy-sse"].transport == "sse"
    assert parse_entry("a", {"url": "https://x/mcp"}).transport == "http"
    assert parse_entry("b", {"url": "https://x/mcp", "type": "streamable-http"}).transport == "http"
    assert parse_entry("c", {"serverUrl": "https://x/sse", "type": "sse"}).url == "https://x/sse"


def test_describe_shell_quotes_the_command_or_gives_the_url() -> None:
    specs = load_config(CLAUDE)
    described = specs["git"].describe()
    assert described == "uvx mcp-server-git --repository '/Users/alice/src/my project'"
    assert shlex.split(described) == specs["git"].command
    assert specs["linear"].describe() == "https://mcp.linear.app/mcp"


def test_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist") as caught:
        load_config(tmp_path / "nope.json")
    assert "\n" not in str(caught.value)


def test_invalid_json_error_gives_line_and_column() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(CONFIGS / "invalid_json.json")
    message = str(caught.value)
    assert f"{CONFIGS / 'invalid_json.json'}:5:1: invalid JSON" in message
    assert "\n" not in message


def test_config_without_mcpservers_is_rejected() -> None:
    with pytest.raises(ConfigError, match='no top-level "mcpServers"'):
        load_config(CONFIGS / "no_mcpservers.json")


def test_entry_with_neither_command_nor_url_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"server 'broken' has neither \"command\".*nor \"url\""):
        load_config(CONFIGS / "entry_without_command.json")


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ("npx", "must be an object"),
        ({"command": "npx", "args": "-y server"}, "args must be a list of strings"),
        ({"command": "npx", "env": {"PORT": 8080}}, "env must be an object of string values"),
        ({"command": "npx", "url": "https://x"}, "both a command and a url"),
        ({"url": "wss://x", "type": "websocket"}, "unknown type 'websocket'"),
        ({"command": ""}, "command must be a non-empty string"),
    ],
)
def test_malformed_entries_are_rejected_with_the_reason(entry: object, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        parse_entry("x", entry)


def test_builtin_upstreams_run_with_this_interpreter() -> None:
    builtins = builtin_upstreams()
    assert builtins["demo"].command == [sys.executable, "-m", "mcptape.servers.demo"]
    assert builtins["debug-script"].command == [sys.executable, "-m", "mcptape.servers.debug_script"]
    assert resolve_upstream("demo", default_config=Path("/nonexistent/config.json")) == builtins["demo"]


def test_the_builtin_recordings_server_reads_the_database_and_registry_it_is_given(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"files": {"command": "npx"}})
    spec = known_upstreams(config, db="postgresql+psycopg://u:secret@h/db")["recordings"]
    assert spec.command == [
        sys.executable,
        "-m",
        "mcptape.servers.recordings",
        "--config",
        str(config.resolve()),
    ]
    # Through the environment: the password stays out of the command line a recording shows.
    assert spec.env == {"MCPTAPE_DB": "postgresql+psycopg://u:secret@h/db"}
    assert "secret" not in spec.describe()
    assert builtin_upstreams()["recordings"].env is None


def test_config_entry_takes_precedence_over_a_builtin(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"demo": {"command": "my-demo"}, "other": {"url": "https://x/mcp"}})
    assert resolve_upstream("demo", path).command == ["my-demo"]
    assert list(known_upstreams(path)) == ["demo", "other", "debug-script", "recordings"]
    assert resolve_upstream("debug-script", path) == builtin_upstreams()["debug-script"]


def test_unknown_upstream_error_lists_the_known_names(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"files": {"command": "npx"}})
    with pytest.raises(
        ConfigError, match=r"unknown upstream 'filez'.*: files, debug-script, demo, recordings$"
    ):
        resolve_upstream("filez", path)
    with pytest.raises(ConfigError, match=r"no desktop client config at .*pass --config FILE"):
        resolve_upstream("filez", default_config=tmp_path / "none.json")


def test_without_config_the_desktop_clients_config_is_read(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"files": {"command": "npx", "args": ["-y", "srv"]}})
    assert resolve_upstream("files", default_config=path).command == ["npx", "-y", "srv"]
    assert resolve_upstream("demo", default_config=path) == builtin_upstreams()["demo"]
    with pytest.raises(ConfigError) as caught:
        resolve_upstream("filez", default_config=path)
    message = str(caught.value)
    assert f"not in {path} (the desktop client's config" in message
    assert "known names: files, debug-script, demo, recordings; pass --config FILE" in message
    # A broken client config does not hide the built-ins, and is named when it matters.
    path.write_text("{nope", encoding="utf-8")
    assert resolve_upstream("demo", default_config=path) == builtin_upstreams()["demo"]
    with pytest.raises(ConfigError, match=r"invalid JSON.*read because no --config was given"):
        resolve_upstream("files", default_config=path)


@pytest.mark.slow
def test_record_upstream_without_config_uses_the_desktop_clients_config(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.helpers.paths import MCPTAPE
    from tests.helpers.recording import RAW_ECHO

    claude = tmp_path / "xdg" / "Claude"
    claude.mkdir(parents=True)
    entry = {"command": RAW_ECHO[0], "args": RAW_ECHO[1:]}
    (claude / "claude_desktop_config.json").write_text(json.dumps({"mcpServers": {"echo": entry}}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "MCPTAPE_DB": str(tmp_path / "rec.db")}
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    done = subprocess.run(
        [*MCPTAPE, "record", "--upstream", "echo"], input=line, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == line
    missing = subprocess.run(
        [*MCPTAPE, "record", "--upstream", "files"], capture_output=True, text=True, env=env, timeout=60
    )
    assert missing.returncode == 2
    assert "the desktop client's config" in missing.stderr and "--config FILE" in missing.stderr


def test_default_client_config_path_follows_each_platform() -> None:
    home = Path("/home/alice")
    claude = Path("Claude") / "claude_desktop_config.json"
    mac = default_client_config_path("darwin", {}, home)
    assert mac == home / "Library" / "Application Support" / claude
    appdata = "/mnt/c/Users/alice/AppData/Roaming"
    assert default_client_config_path("win32", {"APPDATA": appdata}, home) == Path(appdata) / claude
    assert default_client_config_path("win32", {}, home) == home / "AppData" / "Roaming" / claude
    assert default_client_config_path("linux", {}, home) == home / ".config" / claude
    xdg = {"XDG_CONFIG_HOME": "/srv/conf"}
    assert default_client_config_path("linux", xdg, home) == Path("/srv/conf") / claude
    # A relative XDG_CONFIG_HOME is invalid by the XDG spec and ignored.
    assert default_client_config_path("linux", {"XDG_CONFIG_HOME": "conf"}, home) == home / ".config" / claude


def test_a_deeply_nested_config_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"mcpServers": {}, "x": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ConfigError, match="nested too deeply") as caught:
        load_config(path)
    assert "\n" not in str(caught.value)


def test_reading_a_config_keeps_crlf_and_strips_only_the_bom(tmp_path: Path) -> None:
    from mcptape.config.registry import read_config_document

    path = tmp_path / "c.json"
    path.write_bytes(b'\xef\xbb\xbf{\r\n  "mcpServers": {}\r\n}\r\n')
    text, document = read_config_document(path)
    assert text == '{\r\n  "mcpServers": {}\r\n}\r\n'
    assert document == {"mcpServers": {}}


def test_vscode_mcp_json_entries_under_servers_are_read(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    document = {
        "inputs": [],
        "servers": {
            "fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]},
            "web": {"type": "streamableHttp", "url": "https://x/mcp"},
        },
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    specs = load_config(path)
    assert specs["fs"].command == ["npx", "-y", "fs"]
    assert specs["web"].transport == "http"
    assert resolve_upstream("fs", path).command == ["npx", "-y", "fs"]


def test_one_malformed_entry_does_not_hide_the_others(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"good": {"command": "srv"}, "bad": {"command": 5}, "empty": {}})
    registry = read_registry(path)
    assert list(registry.specs) == ["good"]
    assert set(registry.problems) == {"bad", "empty"}
    assert "command must be a non-empty string" in registry.problems["bad"]
    assert resolve_upstream("good", path).command == ["srv"]
    assert list(known_upstreams(path)) == ["good", "debug-script", "demo", "recordings"]
    # Asking for the broken entry gives its complaint, not "unknown upstream".
    with pytest.raises(ConfigError, match=r"server 'bad': command must be a non-empty string"):
        resolve_upstream("bad", path)
    with pytest.raises(ConfigError, match=r"server 'empty' has neither"):
        resolve_upstream("empty", default_config=path)


def test_servers_lists_a_malformed_entry_as_invalid_with_its_reason(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcptape.cli.main import cli

    path = write_config(tmp_path, {"good": {"command": "srv"}, "bad\x1b]0;x\x07": {"args": ["a"]}})
    result = CliRunner().invoke(cli, ["servers", "--config", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["good"]["transport"] == "stdio"
    broken = rows["bad\x1b]0;x\x07"]
    assert broken["transport"] == "invalid"
    assert broken["target"].startswith("has neither")
    table = CliRunner().invoke(cli, ["servers", "--config", str(path)])
    assert table.exit_code == 0
    assert "\x1b" not in table.output and "invalid" in table.output


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("http://[::1/mcp", "is not a valid URL (Invalid IPv6 URL)"),
        ("http://h:99999/mcp", "is not a valid URL (Port out of range"),
        ("http://h:port/mcp", "is not a valid URL"),
        ("http:///mcp", "names no host"),
        ("ws://h/mcp", "is not an http:// or https:// URL"),
    ],
)
@pytest.mark.slow
def test_a_url_that_cannot_name_a_server_is_a_one_line_error_everywhere(
    url: str, complaint: str, tmp_path: Path
) -> None:
    import subprocess

    from mcptape.config.registry import url_problem
    from tests.helpers.cli_errors import assert_one_line_error
    from tests.helpers.paths import MCPTAPE

    assert complaint in (url_problem(url) or "")
    assert url_problem("https://mcp.example.com:8443/mcp?x=1") is None
    path = write_config(tmp_path, {"remote": {"url": url}})
    with pytest.raises(ConfigError, match="url"):
        resolve_upstream("remote", path)
    record = subprocess.run(
        [*MCPTAPE, "record", "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert_one_line_error(record, complaint)
    call = subprocess.run(  # call's usage errors exit 1 (issue 8)
        [*MCPTAPE, "call", "--url", url, "-m", "ping"], capture_output=True, text=True, timeout=60
    )
    assert call.returncode == 1 and "Traceback" not in call.stderr
    assert call.stderr.count("\n") == 1 and complaint in call.stderr
