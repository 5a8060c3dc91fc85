"""The README, followed to the letter on a fresh checkout with an empty HOME.

The set-up command's install steps are what the test suite itself ran to get here, so a
fresh directory gets this checkout's virtual environment as its `.venv`; from there on,
every command is run as printed: the demo (with mcptape not on PATH), every command the
demo prints, then the tour's commands with `.venv/bin` on PATH (as `. .venv/bin/activate`
leaves it). The demo and every SQL query the README prints also run on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.postgres import Postgres, private_server

README = (ROOT / "README.md").read_text(encoding="utf-8")
SET_UP = [
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mcptape demo",
    "scripts/test",
]
# Tour commands not run here, and why. Benchmarks (`.venv/bin/python bench/...`) are not run
# either: each takes minutes; their own runs print their figures.
BENCHMARK = ".venv/bin/python bench/"
NOT_RUN = {
    "scripts/test": "runs this very test suite",
    "mcptape record --url https://mcp.example.com/mcp --header 'Authorization: Bearer ${TOKEN}'": (
        "needs a remote server and its token (tests/test_http_record.py runs record --url on loopback)"
    ),
    "mcptape record --upstream remote --config claude_desktop_config.json": (
        "needs a config with a remote entry (tests/test_http_record.py covers remote registry entries)"
    ),
    "mcptape proxy --config claude_desktop_config.json": (
        "serves until stopped (tests/test_gateway*.py run the gateway)"
    ),
    "curl -s http://127.0.0.1:8808/health": "needs the gateway above running (tests/test_gateway_security.py)",
    "mcptape tail": "follows until Ctrl-C (tests/test_tail_cli.py runs it and stops it)",
    "mcptape tail --name 'files*' --method 'tools/*' --slow 500 --errors": "follows until Ctrl-C (tests/test_tail_cli.py)",
    "mcptape tail --json | jq 'select(.status != \"ok\")'": "follows until Ctrl-C (tests/test_tail_cli.py)",
    "mcptape ui": "serves until Ctrl-C (tests/test_view_browser.py clicks through it)",
    "mcptape ui --config claude_desktop_config.json --handle-sampling auto": (
        "serves until Ctrl-C (tests/test_client_browser.py drives its client page in Chromium)"
    ),
    "mcptape tui --upstream demo": "a full-screen terminal app (tests/test_client_tui*.py drive it headless)",
    "mcptape tui -- npx -y @modelcontextprotocol/server-everything": (
        "a full-screen terminal app (tests/test_client_tui_everything.py drives it on server-everything)"
    ),
    ".venv/bin/pip install -e '.[postgres]' && .venv/bin/python deploy/fleet.py up --config servers.json": (
        "starts PostgreSQL, three replicas and HAProxy on fixed ports (tests/test_fleet_haproxy.py runs it)"
    ),
    ".venv/bin/python deploy/fleet.py down": "stops the fleet above (tests/test_fleet_haproxy.py)",
    "mcptape record --otlp http://localhost:4318 -- npx -y @modelcontextprotocol/server-everything": (
        "needs an OTLP receiver and a client (tests/test_otlp_modes.py runs --otlp on every command)"
    ),
    "mcptape proxy --otlp http://localhost:4318 --config claude_desktop_config.json": (
        "serves until stopped (tests/test_otlp_modes.py runs proxy --otlp)"
    ),
    "mcptape export last --otlp http://localhost:4318": (
        "needs an OTLP receiver (tests/test_export_formats.py posts to one)"
    ),
}
CONFIG = {
    "mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    }
}


def sh_blocks(text: str) -> list[list[str]]:
    """The commands of each ```sh block, comments and blank lines left out."""
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", text, re.S):
        commands = []
        for line in body.splitlines():
            command = re.split(r"\s+# ", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
        blocks.append(commands)
    return blocks


def printed_commands(output: str) -> list[str]:
    """The commands the demo printed: after `$ `, and the indented lines under "Try next:"."""
    commands = [line.split("$ ", 1)[1] for line in output.splitlines() if line.startswith("  $ ")]
    tail = output.split("\nTry next:\n", 1)[1]
    commands += [
        line.strip() for line in tail.splitlines() if line.startswith("  ") and not line.startswith("      ")
    ]
    return commands


class Checkout:
    """A fresh directory set up by the README's first command, with an empty HOME."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "mcptape"
        self.dir.mkdir()
        (self.dir / ".venv").symlink_to(ROOT / ".venv")
        # The repository's files the tour runs (a fresh clone has them).
        for path in ("tests/servers/demo_changed.py",):
            (self.dir / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, self.dir / path)
        self.home = root / "home"
        config = self.home / ".config" / "Claude" / "claude_desktop_config.json"
        config.parent.mkdir(parents=True)
        config.write_text(json.dumps(CONFIG, indent=2) + "\n")
        self.config = config
        venv_bin = str(ROOT / ".venv" / "bin")
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(venv_bin)]
        skip = ("MCPTAPE_", "XDG_", "VIRTUAL_ENV", "COLUMNS", "PYTHON")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
        self.env.update(HOME=str(self.home), PATH=os.pathsep.join(path))

    def run(self, command: str, *, activated: bool = False) -> subprocess.CompletedProcess[str]:
        """``command`` through the shell, as typed, in the checkout."""
        env = dict(self.env)
        if activated:
            env["PATH"] = f"{self.dir / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.dir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )


def test_the_readme_set_up_commands_are_the_two_known_ones() -> None:
    assert sh_blocks(README)[0] == SET_UP


@pytest.mark.slow
@pytest.mark.timeout(360)  # every README command, each a process: a bound on a hang, not a speed check
def test_every_readme_command_works_as_printed_on_a_fresh_checkout(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)
    assert checkout.run("command -v mcptape").returncode != 0  # not on PATH yet: nothing activated
    # The set-up command; its venv and pip install steps are this suite's own .venv.
    demo = checkout.run(SET_UP[0].split(" && ")[-1])
    assert demo.returncode == 0, demo.stderr
    printed = printed_commands(demo.stdout)
    assert printed[0].startswith(".venv/bin/mcptape record --name demo -- ")
    for command in printed[1:]:
        if "<your server command>" in command:
            assert command == ".venv/bin/mcptape record -- <your server command>"
            continue
        proc = checkout.run(command)
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout.strip(), command
    original = checkout.config.read_bytes()
    tour = [command for block in sh_blocks(README)[1:] for command in block]
    assert set(NOT_RUN) <= set(tour) | set(SET_UP)
    ran = []
    for command in tour:
        if command in NOT_RUN or command.startswith(BENCHMARK):
            continue
        proc = checkout.run(command, activated=True)
        assert proc.returncode == 0, (command, proc.stderr)
        if "count(*) as n from exchanges" in command:  # --csv: every method named, no blank row
            rows = proc.stdout.splitlines()[1:]
            assert rows and not [row for row in rows if row.startswith(",")], proc.stdout
        ran.append(command.split()[1])
    assert {"wrap", "unwrap", "sessions", "show", "export", "sql"} <= set(ran)
    assert checkout.config.read_bytes() == original  # wrap, then unwrap: as it was
    assert (checkout.dir / "s.jsonl").read_text().count("\n") > 10


def text_blocks(text: str) -> list[str]:
    """The body of each ```text block."""
    return re.findall(r"```text\n(.*?)```", text, re.S)


def masked(output: str) -> str:
    """Replay output with what changes every run (ids, the start time) masked."""
    output = re.sub(r"\b[0-9a-f]{12}\b", "ID", output)
    return re.sub(r"started \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "started TIME", output)


@pytest.mark.slow
def test_the_failing_replay_the_readme_shows_is_what_replay_prints(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)
    db = shlex.quote(str(tmp_path / "demo.db"))
    assert checkout.run(f".venv/bin/mcptape demo --db {db}").returncode == 0
    changed = checkout.run(
        f"mcptape replay demo --db {db} -- python tests/servers/demo_changed.py", activated=True
    )
    assert changed.returncode == 1, changed.stderr
    [shown] = [block for block in text_blocks(README) if "exchanges match" in block]
    assert masked(changed.stdout) == masked(shown)


def test_the_readme_names_every_system_package_ci_installs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    packages = re.findall(r"missing\+=\((\S+)\)", ci)
    assert {"nodejs", "npm", "postgresql"} <= set(packages)
    set_up = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    named = {
        word for command in re.findall(r"apt-get install ([a-z0-9 -]+)`", set_up) for word in command.split()
    }
    assert set(packages) <= named, f"the README's set-up does not say to install {set(packages) - named}"
    assert "export MCPTAPE_TESTS_NEED_POSTGRES=1" in ci  # in CI a PostgreSQL test fails, never skips


def test_a_missing_postgresql_skips_here_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.helpers.postgres as pg

    monkeypatch.setattr(pg, "postgres_bin", lambda: None)
    monkeypatch.delenv(pg.REQUIRED_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"), pg.private_server():
        pass
    monkeypatch.setenv(pg.REQUIRED_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="MCPTAPE_TESTS_NEED_POSTGRES"), pg.private_server():
        pass


def readme_queries() -> list[str]:
    """The SQL of every `mcptape sql "..."` the README prints."""
    tour = [command for block in sh_blocks(README) for command in block]
    return [shlex.split(c)[2] for c in tour if c.startswith("mcptape sql ")]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


@pytest.mark.slow
def test_the_demo_and_every_readme_query_run_on_postgresql(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.url(postgres.create_database())
    checkout = Checkout(tmp_path)
    demo = checkout.run(f".venv/bin/mcptape demo --db {shlex.quote(url)}")
    assert demo.returncode == 0, demo.stderr
    assert "fail               1" in demo.stdout.replace("  ", "  ") or "fail" in demo.stdout
    queries = readme_queries()
    assert len(queries) >= 5  # the tour's four, the team section's conversations, and more
    for query in queries:
        proc = checkout.run(f"mcptape sql --db {shlex.quote(url)} {shlex.quote(query)}", activated=True)
        assert proc.returncode == 0, (query, proc.stderr)
