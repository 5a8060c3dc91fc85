"""`mcptape wrap` / `mcptape unwrap`: rewriting a desktop client's mcpServers config."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcptape.config.wrap import mcptape_launcher, unwrap_servers, wrap_servers, wrapped_split
from tests.helpers.paths import MCPTAPE, ROOT

CLAUDE = ROOT / "tests" / "data" / "configs" / "claude_desktop_config.json"
LAUNCHER = ["/opt/mcptape/bin/mcptape"]
STDIO_ENTRIES = ["filesystem", "git", "notes", "weather-local"]
REMOTE_ENTRIES = ["linear", "legacy-sse"]


def original() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(CLAUDE.read_text(encoding="utf-8"))
    return document


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A copy of the Claude Desktop config, readable by its owner only (it holds API keys)."""
    path = tmp_path / "claude_desktop_config.json"
    shutil.copyfile(CLAUDE, path)
    path.chmod(0o600)
    return path


def mcptape(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, *map(str, args)], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_wrap_runs_each_stdio_entry_through_record_keeping_other_keys_in_order() -> None:
    wrapped, outcomes = wrap_servers(original(), LAUNCHER, None)
    notes = wrapped["mcpServers"]["notes"]
    assert notes == {
        "command": "/opt/mcptape/bin/mcptape",
        "args": [
            "record",
            "--name",
            "notes",
            "--on-store-error",
            "forward",
            "--",
            "node",
            "build/index.js",
            "--vault",
            "Personal Notes",
        ],
        "env": {"NOTES_API_KEY": "sk-test-0000", "LOG_LEVEL": "debug"},
        "cwd": "/Users/alice/src/notes-mcp",
        "disabled": False,
    }
    assert list(notes) == ["command", "args", "env", "cwd", "disabled"]
    assert list(wrapped) == ["globalShortcut", "mcpServers", "preferences"]
    assert wrapped["preferences"] == original()["preferences"]
    assert [o.name for o in outcomes if o.action == "wrapped"] == STDIO_ENTRIES


def test_wrap_adds_args_to_an_entry_that_had_none() -> None:
    wrapped, _ = wrap_servers(original(), LAUNCHER, None)
    assert wrapped["mcpServers"]["weather-local"] == {
        "command": "/opt/mcptape/bin/mcptape",
        "args": [
            "record",
            "--name",
            "weather-local",
            "--on-store-error",
            "forward",
            "--",
            "/Users/alice/bin/weather-mcp",
        ],
    }


def test_wrap_with_a_python_launcher_and_a_database() -> None:
    launcher = [sys.executable, "-m", "mcptape"]
    wrapped, _ = wrap_servers(original(), launcher, "/data/rec.db", frozenset({"git"}))
    assert wrapped["mcpServers"]["git"]["command"] == sys.executable
    assert wrapped["mcpServers"]["git"]["args"] == [
        "-m", "mcptape", "record", "--name", "git", "--db", "/data/rec.db", "--on-store-error", "forward", "--",
        "uvx", "mcp-server-git", "--repository", "/Users/alice/src/my project",
    ]  # fmt: skip
    assert wrapped["mcpServers"]["filesystem"] == original()["mcpServers"]["filesystem"]


def test_wrap_leaves_remote_entries_alone_and_says_so() -> None:
    wrapped, outcomes = wrap_servers(original(), LAUNCHER, None)
    for name in REMOTE_ENTRIES:
        assert wrapped["mcpServers"][name] == original()["mcpServers"][name]
    remote = [o for o in outcomes if o.name in REMOTE_ENTRIES]
    assert [o.action for o in remote] == ["left alone", "left alone"]
    # It says what wrap can do about them, not what a command that does not exist would.
    assert "mcptape proxy" not in remote[0].detail and "--remote" in remote[0].detail


def test_wrapping_twice_changes_nothing() -> None:
    once, _ = wrap_servers(original(), LAUNCHER, None)
    twice, outcomes = wrap_servers(once, ["/elsewhere/mcptape"], "/other.db")
    assert twice == once
    assert {o.action for o in outcomes} == {"already wrapped", "left alone"}


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "/opt/bin/mcptape", "args": ["record", "--name", "x", "--", "npx", "-y", "srv"]},
        {"command": "mcptape", "args": ["record", "--", "npx", "-y", "srv"]},
        {
            "command": "/usr/bin/python3",
            "args": ["-m", "mcptape", "record", "--db", "a.db", "--", "npx", "-y", "srv"],
        },
        {"command": "uvx", "args": ["mcptape", "record", "--", "npx", "-y", "srv"]},
        {"command": "C:\\Tools\\mcptape.EXE", "args": ["record", "--", "npx", "-y", "srv"]},
    ],
)
def test_wrapped_entries_are_recognised_in_every_launcher_form(entry: dict[str, Any]) -> None:
    split = wrapped_split(entry)
    assert split is not None
    assert split[1] == ["npx", "-y", "srv"]


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "npx", "args": ["-y", "srv"]},
        {"command": "mcptape", "args": ["sessions"]},
        {"command": "mcptape-helper", "args": ["record", "--", "x"]},
        {"url": "https://x/mcp"},
    ],
)
def test_other_entries_are_not_taken_for_wrapped_ones(entry: dict[str, Any]) -> None:
    assert wrapped_split(entry) is None


def test_unwrap_gives_back_the_original_document() -> None:
    wrapped, _ = wrap_servers(original(), LAUNCHER, "/data/rec.db")
    restored, outcomes = unwrap_servers(wrapped)
    assert restored == original()
    assert json.dumps(restored) == json.dumps(original())  # key order too
    assert [o.name for o in outcomes if o.action == "unwrapped"] == STDIO_ENTRIES


def test_unwrap_keeps_edits_made_since_wrapping() -> None:
    wrapped, _ = wrap_servers(original(), LAUNCHER, None)
    wrapped["mcpServers"]["notes"]["env"]["LOG_LEVEL"] = "warn"
    wrapped["mcpServers"]["git"]["args"].append("--verbose")
    wrapped["mcpServers"]["added-later"] = {"command": "deno", "args": ["run", "server.ts"]}
    restored, _ = unwrap_servers(wrapped)
    assert restored["mcpServers"]["notes"]["env"]["LOG_LEVEL"] == "warn"
    assert restored["mcpServers"]["git"]["args"][-1] == "--verbose"
    assert restored["mcpServers"]["added-later"] == {"command": "deno", "args": ["run", "server.ts"]}


@pytest.mark.slow
def test_wrap_then_unwrap_on_a_copy_gives_the_same_json(config: Path, tmp_path: Path) -> None:
    wrapped = mcptape("wrap", config, "--db", tmp_path / "rec.db")
    assert wrapped.returncode == 0, wrapped.stderr
    assert "wrapped" in wrapped.stdout and "filesystem" in wrapped.stdout
    assert load(config)["mcpServers"]["git"]["args"][:5] == [
        "record",
        "--name",
        "git",
        "--db",
        str(tmp_path / "rec.db"),
    ]
    unwrapped = mcptape("unwrap", config)
    assert unwrapped.returncode == 0, unwrapped.stderr
    assert load(config) == original()


@pytest.mark.slow
def test_wrap_backs_up_the_original_once(config: Path) -> None:
    backup = config.with_name(config.name + ".mcptape-backup")
    assert mcptape("wrap", config, "--only", "git").returncode == 0
    assert backup.read_bytes() == CLAUDE.read_bytes()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    # A second wrap finds the file partly wrapped: the backup must still hold the original.
    after_first = config.read_bytes()
    second = mcptape("wrap", config)
    assert second.returncode == 0, second.stderr
    assert f"Kept the original in {backup}" in second.stdout
    assert backup.read_bytes() == CLAUDE.read_bytes()
    # Every rewrite is backed up: the file as the second wrap found it is kept too.
    previous = config.with_name(config.name + ".mcptape-previous")
    assert previous.read_bytes() == after_first
    assert stat.S_IMODE(previous.stat().st_mode) == 0o600


@pytest.mark.slow
def test_only_takes_repeated_or_comma_separated_names(config: Path) -> None:
    assert mcptape("wrap", config, "--only", "git,notes", "--only", "filesystem").returncode == 0
    servers = load(config)["mcpServers"]
    assert [name for name in servers if wrapped_split(servers[name])] == ["filesystem", "git", "notes"]
    assert mcptape("unwrap", config, "--only", "notes").returncode == 0
    servers = load(config)["mcpServers"]
    assert [name for name in servers if wrapped_split(servers[name])] == ["filesystem", "git"]


@pytest.mark.slow
def test_wrap_writes_in_place_keeping_mode_and_untouched_text(config: Path) -> None:
    assert mcptape("wrap", config, "--only", "filesystem").returncode == 0
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    text = config.read_text(encoding="utf-8")
    assert '"args": ["build/index.js", "--vault", "Personal Notes"],' in text
    assert [p.name for p in config.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
def test_wrap_of_a_symlinked_config_replaces_the_target_and_keeps_the_link(
    config: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(config)
    assert mcptape("wrap", link).returncode == 0
    assert link.is_symlink()
    assert wrapped_split(load(config)["mcpServers"]["git"]) is not None


@pytest.mark.slow
def test_dry_run_prints_a_diff_and_writes_nothing(config: Path) -> None:
    result = mcptape("wrap", config, "--dry-run", "--only", "git")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"--- {config}\n+++ {config}\n@@ ")
    assert '-      "command": "uvx",\n' in result.stdout
    assert (
        '+      "args": ["record", "--name", "git", "--on-store-error", "forward", "--", "uvx", "mcp-server-git", "--repository"'
        in result.stdout
    )
    assert "Dry run: nothing written." in result.stderr
    assert config.read_bytes() == CLAUDE.read_bytes()
    assert not config.with_name(config.name + ".mcptape-backup").exists()


@pytest.mark.slow
def test_unwrap_dry_run_shows_the_restoring_diff(config: Path) -> None:
    assert mcptape("wrap", config).returncode == 0
    wrapped_text = config.read_text(encoding="utf-8")
    result = mcptape("unwrap", config, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert '+      "command": "npx",\n' in result.stdout
    assert config.read_text(encoding="utf-8") == wrapped_text


@pytest.mark.slow
def test_relative_database_path_is_made_absolute(config: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [*MCPTAPE, "wrap", str(config), "--db", "rec.db", "--only", "git"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert load(config)["mcpServers"]["git"]["args"][4] == str(tmp_path / "rec.db")


@pytest.mark.slow
def test_wrap_without_config_uses_the_claude_desktop_file(tmp_path: Path) -> None:
    claude_dir = tmp_path / "xdg" / "Claude"
    claude_dir.mkdir(parents=True)
    shutil.copyfile(CLAUDE, claude_dir / "claude_desktop_config.json")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    env.pop("MCPTAPE_DB", None)
    result = mcptape("wrap", "--only", "notes", env=env)
    assert result.returncode == 0, result.stderr
    assert wrapped_split(load(claude_dir / "claude_desktop_config.json")["mcpServers"]["notes"]) is not None
    missing = mcptape("wrap", env={**env, "XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert missing.returncode == 2
    assert "the Claude Desktop default; pass CONFIG" in missing.stderr


@pytest.mark.parametrize(
    ("command", "make", "complaint"),
    [
        ("wrap", None, "does not exist"),
        ("unwrap", "invalid_json.json", ":5:1: invalid JSON"),
        ("wrap", "no_mcpservers.json", 'no top-level "mcpServers"'),
        ("wrap", "claude_desktop_config.json --only nope", "no server named 'nope' in the config"),
    ],
)
@pytest.mark.slow
def test_user_errors_are_one_line_with_exit_status_2(
    tmp_path: Path, command: str, make: str | None, complaint: str
) -> None:
    args: list[str | Path] = [tmp_path / "missing.json"]
    if make is not None:
        name, *rest = make.split()
        args = [CLAUDE.parent / name, *rest]
    result = mcptape(command, *args)
    assert result.returncode == 2
    assert result.stderr.startswith("mcptape: error: ")
    assert complaint in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.slow
def test_launcher_is_an_absolute_command_that_runs_without_path() -> None:
    launcher = mcptape_launcher()
    assert os.path.isabs(launcher[0])
    result = subprocess.run(
        [*launcher, "--version"],
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent"},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "mcptape" in result.stdout


@pytest.mark.slow
def test_wrapped_demo_entry_starts_the_server_through_the_recorder(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    path = tmp_path / "config.json"
    entry = {"command": sys.executable, "args": ["-m", "mcptape.servers.demo"], "cwd": str(tmp_path)}
    path.write_text(json.dumps({"mcpServers": {"demo": entry}}), encoding="utf-8")
    db = tmp_path / "rec.db"
    assert mcptape("wrap", path, "--db", db).returncode == 0
    wrapped = load(path)["mcpServers"]["demo"]
    assert wrapped_split(wrapped) is not None

    async def list_tools() -> list[str]:
        params = StdioServerParameters(command=wrapped["command"], args=wrapped["args"], cwd=wrapped["cwd"])
        async with Client(params) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(list_tools) == ["add", "echo", "weather", "countdown", "fail"]
    assert db.exists()


def run(*args: str | Path) -> Any:
    """`mcptape ARGS` in this process (the same click command; fast for many cases)."""
    from click.testing import CliRunner

    from mcptape.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


ROUND_TRIPS = {
    "claude": CLAUDE.read_text(encoding="utf-8"),
    "bom-crlf-tabs": (
        '\ufeff{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"command": "x",\r\n\t\t\t"args": [\r\n'
        '\t\t\t\t"1"\r\n\t\t\t]\r\n\t\t},\r\n\t\t"b": {"command": "y"}\r\n\t}\r\n}\r\n'
    ),
    "escapes-empty-args-duplicates": (
        '{"mcpServers": {"caf\\u00e9": {"command": "n\\u00e9", "args": [], "env": {"K": "\\u00e9"}},'
        ' "dup": {"command": "old"}, "dup": {"command": "new", "args": ["-v"]},'
        ' "r": {"url": "https://x/mcp", "type": "streamable-http"}}, "other": {"x": [1.0, 1e0]}}'
    ),
    "args-first-and-blank-list": (
        '{\n  "mcpServers": {\n    "s": {"args": [ ], "command": "srv"},\n'
        '    "t": {\n      "args": ["a"],\n      "command": "tt"\n    }\n  }\n}\n'
    ),
    "continuation-alignment": (
        '{"mcpServers": {"a": {"command": "x",\n                      "args": ["1", "2"]},\n'
        '                "b": {"command": "y"}}}\n'
    ),
    # VS Code's .vscode/mcp.json: the entries sit under "servers", local ones say "type": "stdio".
    "vscode-servers": (
        '{\n  "inputs": [],\n  "servers": {\n    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]},\n'
        '    "web": {"type": "http", "url": "https://x/mcp"}\n  }\n}\n'
    ),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_wrap_then_unwrap_gives_back_the_original_bytes(tmp_path: Path, name: str) -> None:
    original_bytes = ROUND_TRIPS[name].encode("utf-8")
    path = tmp_path / "config.json"
    path.write_bytes(original_bytes)
    wrapped = run("wrap", path, "--db", tmp_path / "rec.db")
    assert wrapped.exit_code == 0, wrapped.output
    text = path.read_bytes()
    assert text != original_bytes
    assert text.startswith(b"\xef\xbb\xbf") == original_bytes.startswith(b"\xef\xbb\xbf")
    assert (b"\r\n" in text) == (b"\r\n" in original_bytes)
    assert b"\n" not in text.replace(b"\r\n", b"") or b"\r\n" not in original_bytes
    document = json.loads(text.decode("utf-8-sig"))
    servers = document.get("mcpServers", document.get("servers"))
    assert all(wrapped_split(entry) for entry in servers.values() if "url" not in entry)
    unwrapped = run("unwrap", path)
    assert unwrapped.exit_code == 0, unwrapped.output
    assert path.read_bytes() == original_bytes


def test_wrap_changes_only_the_bytes_it_must(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(ROUND_TRIPS["escapes-empty-args-duplicates"], encoding="utf-8")
    assert run("wrap", path).exit_code == 0
    text = path.read_text(encoding="utf-8")
    for kept in (
        '"caf\\u00e9": {"command": ',
        '"env": {"K": "\\u00e9"}}',
        '"dup": {"command": "old"}, "dup": {"command": ',
        '"r": {"url": "https://x/mcp", "type": "streamable-http"}}, "other": {"x": [1.0, 1e0]}}',
    ):
        assert kept in text
    # The original command keeps its spelling inside the wrapped args.
    assert '"--", "n\\u00e9"]' in text
    assert '"--", "new", "-v"]' in text


def test_wrap_copies_continuation_alignment_instead_of_taking_it_for_indentation(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(ROUND_TRIPS["continuation-alignment"], encoding="utf-8")
    assert run("wrap", path, "--only", "a").exit_code == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    assert lines[0].startswith('{"mcpServers": {"a": {"command": "')
    assert lines[1].startswith(
        '                      "args": ["record", "--name", "a", "--on-store-error", "forward", "--", "x", "1", "2"]'
    )
    assert lines[2] == '                "b": {"command": "y"}}}'


@pytest.mark.slow
def test_unwrap_leaves_alone_what_wrap_did_not_write(tmp_path: Path) -> None:
    servers = {
        "ssh": {
            "command": "ssh",
            "args": ["buildhost", "mcptape", "record", "--name", "x", "--", "npx", "srv"],
        },
        "docker": {
            "command": "docker",
            "args": ["run", "-i", "ghcr.io/acme/mcptape", "record", "--", "node", "s"],
        },
        "by-hand": {"command": "mcptape", "args": ["record", "--", "npx", "srv"]},
        "uvx": {"command": "uvx", "args": ["mcptape", "record", "--name", "u", "--", "npx", "srv"]},
        "extra-option": {
            "command": "/opt/bin/mcptape",
            "args": ["record", "--name", "e", "--grace", "1", "--", "x"],
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    before = path.read_bytes()
    result = mcptape("unwrap", path)
    assert result.returncode == 0, result.stderr
    assert path.read_bytes() == before
    assert "Nothing to change" in result.stdout
    assert result.stdout.count("runs mcptape, but not as `mcptape wrap` writes it") == len(servers)
    assert not path.with_name(path.name + ".mcptape-backup").exists()
    # Nor does wrap record them a second time.
    again = run("wrap", path)
    assert again.exit_code == 0 and path.read_bytes() == before
    assert again.output.count("already wrapped") == len(servers)


@pytest.mark.parametrize(
    ("entry", "cut"),
    [
        ({"command": "/opt/bin/mcptape", "args": ["record", "--name", "x", "--", "npx", "-y"]}, 5),
        (
            {
                "command": "/usr/bin/python3.11",
                "args": ["-m", "mcptape", "record", "--name", "x", "--db", "a", "--", "n"],
            },
            9,
        ),
        ({"command": "C:\\Tools\\mcptape.EXE", "args": ["record", "--name", "x", "--", "npx"]}, 5),
    ],
)
def test_parse_wrapped_recognises_what_wrap_writes(entry: dict[str, Any], cut: int) -> None:
    # ``cut`` counts the command as 0: it is where the original command stands.
    from mcptape.config.wrap import parse_wrapped

    wrapped = parse_wrapped(entry)
    assert wrapped is not None and wrapped.cut == cut


@pytest.mark.slow
def test_unwrap_backs_up_before_it_rewrites(config: Path) -> None:
    assert mcptape("wrap", config, "--only", "git").returncode == 0
    wrapped_bytes = config.read_bytes()
    result = mcptape("unwrap", config)
    assert result.returncode == 0, result.stderr
    assert config.read_bytes() == CLAUDE.read_bytes()
    assert config.with_name(config.name + ".mcptape-previous").read_bytes() == wrapped_bytes
    assert config.with_name(config.name + ".mcptape-backup").read_bytes() == CLAUDE.read_bytes()


def test_rewrites_ask_for_the_owner_and_group_of_the_file(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcptape.config import files as configfile

    st = config.stat()
    calls: list[tuple[str, int, int]] = []
    # Pretend every new file came out owned by someone else, as when root runs wrap.
    monkeypatch.setattr(configfile, "_owner", lambda path: (st.st_uid + 1, st.st_gid + 1))
    monkeypatch.setattr(configfile.os, "chown", lambda path, uid, gid: calls.append((str(path), uid, gid)))
    assert run("wrap", config, "--only", "git").exit_code == 0
    assert {(uid, gid) for _, uid, gid in calls} == {(st.st_uid, st.st_gid)}
    targets = [Path(p).name for p, _, _ in calls]
    assert config.name + ".mcptape-backup" in targets
    assert any(name.startswith(f".{config.name}.") and name.endswith(".tmp") for name in targets)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a file to another user needs root (the test above covers the logic)"
)
def test_run_as_root_a_users_config_and_its_backups_stay_the_users(config: Path) -> None:
    os.chown(config, 4242, 4343)
    config.chmod(0o640)
    assert run("wrap", config, "--only", "git").exit_code == 0
    assert run("unwrap", config).exit_code == 0
    for path in (
        config,
        config.with_name(config.name + ".mcptape-backup"),
        config.with_name(config.name + ".mcptape-previous"),
    ):
        st = path.stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4242, 4343, 0o640), path


@pytest.mark.slow
def test_a_deeply_nested_config_is_a_one_line_error(tmp_path: Path) -> None:
    from tests.helpers.cli_errors import assert_one_line_error

    path = tmp_path / "config.json"
    path.write_text('{"mcpServers": {"a": {"command": "x", "deep": ' + "[" * 50_000 + "]" * 50_000 + "}}}")
    for command in ("wrap", "unwrap"):
        assert_one_line_error(mcptape(command, path), "nested too deeply")


def test_wrap_remote_turns_url_entries_into_record_url_commands() -> None:
    wrapped, outcomes = wrap_servers(
        original(), LAUNCHER, "/data/rec.db", frozenset(REMOTE_ENTRIES), remote=True
    )
    assert wrapped["mcpServers"]["linear"] == {
        "command": "/opt/mcptape/bin/mcptape",
        "args": [
            "record", "--name", "linear", "--db", "/data/rec.db", "--on-store-error", "forward", "--url", "https://mcp.linear.app/mcp",
            "--transport", "http", "--header", "Authorization: Bearer lin_api_0000",
        ],
    }  # fmt: skip
    assert wrapped["mcpServers"]["legacy-sse"]["args"] == [
        "record", "--name", "legacy-sse", "--db", "/data/rec.db", "--on-store-error", "forward", "--url", "https://mcp.example.com/sse",
        "--transport", "sse",
    ]  # fmt: skip
    assert [o.action for o in outcomes] == ["wrapped", "wrapped"]
    untyped, _ = wrap_servers({"mcpServers": {"u": {"url": "http://h/mcp"}}}, LAUNCHER, None, remote=True)
    assert untyped["mcpServers"]["u"]["args"] == [
        "record",
        "--name",
        "u",
        "--on-store-error",
        "forward",
        "--url",
        "http://h/mcp",
    ]


def test_wrap_remote_and_unwrap_give_back_the_bytes_and_without_a_backup_the_entry(config: Path) -> None:
    assert run("wrap", config, "--remote").exit_code == 0
    servers = load(config)["mcpServers"]
    assert servers["linear"]["args"][-2:] == ["--header", "Authorization: Bearer lin_api_0000"]
    assert '"linear": {\n      "command": ' in config.read_text(encoding="utf-8")
    assert run("unwrap", config).exit_code == 0
    assert config.read_bytes() == CLAUDE.read_bytes()
    assert run("wrap", config, "--remote").exit_code == 0
    config.with_name(config.name + ".mcptape-backup").unlink()
    assert run("unwrap", config).exit_code == 0
    assert load(config) == original()


@pytest.mark.slow
def test_wrap_prints_the_database_it_records_into(config: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("MCPTAPE_DB", None)
    result = mcptape("wrap", config, "--only", "git", env=env)
    assert result.returncode == 0, result.stderr
    assert f"Recording into {tmp_path / 'data' / 'mcptape' / 'mcptape.db'} (the default" in result.stdout
    explicit = mcptape("wrap", config, "--db", tmp_path / "rec.db", "--dry-run", env=env)
    assert f"Would record into {tmp_path / 'rec.db'}." in explicit.stderr
