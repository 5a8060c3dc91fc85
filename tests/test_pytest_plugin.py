"""The pytest plugin, run by pytest (a subprocess) on a sample project in a temporary folder.

The sample project has a client test (the mcp SDK client against ``mcptape_server``)
and a server test (``mcptape_replay`` of the client test's recording). Its server
command comes from the environment, so a test can swap the real server for a broken
one and see that a played recording needs no server, and that a replay catches a
regression.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

DEMO = json.dumps([sys.executable, "-m", "mcptape.servers.demo"])
CHANGED = json.dumps([sys.executable, str(ROOT / "tests" / "servers" / "demo_changed.py")])
NO_SERVER = json.dumps([sys.executable, "-c", "import sys; sys.exit(7)"])

CLIENT_TEST = """
import json, os
import anyio
from mcp import Client, StdioServerParameters

SERVER = json.loads(os.environ["SAMPLE_SERVER"])


def test_weather(mcptape_server):
    argv = mcptape_server(SERVER)

    async def main():
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy") as client:
            result = await client.call_tool("weather", {"city": "Lisbon"})
            return result.structured_content

    forecast = anyio.run(main)
    assert forecast["city"] == "Lisbon"
"""

SERVER_TEST = """
import json, os


SERVER = json.loads(os.environ["SAMPLE_SERVER"])


def test_server_still_answers_as_recorded(mcptape_replay):
    mcptape_replay(SERVER, recording="test_client/test_weather")
"""


RECORDING = Path("recordings") / "test_client" / "test_weather.jsonl"


def write_project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_client.py").write_text(CLIENT_TEST)
    (folder / "test_server.py").write_text(SERVER_TEST)
    return folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample project whose client test was run once with --mcptape-record-mode=once."""
    folder = write_project(tmp_path_factory.mktemp("sample"))
    proc = run_pytest(folder, DEMO, "test_client.py", "--mcptape-record-mode=once")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded sample project."""
    import shutil

    return Path(shutil.copytree(recorded, tmp_path / "sample"))


def run_pytest(project: Path, server: str, *args: str) -> subprocess.CompletedProcess[str]:
    plugin = (
        []
        if any(ep.name == "mcptape" for ep in entry_points(group="pytest11"))
        else ["-p", "mcptape.replay.pytest_plugin"]
    )
    env = {**os.environ, "SAMPLE_SERVER": server}
    env.pop("MCPTAPE_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )


def test_modes_record_once_then_play_without_the_server(recorded: Path, tmp_path: Path) -> None:
    missing = run_pytest(write_project(tmp_path / "fresh"), DEMO, "test_client.py")
    assert missing.returncode == 1
    assert "no MCP recording" in missing.stdout and "--mcptape-record-mode=once" in missing.stdout

    lines = (recorded / RECORDING).read_text().splitlines()
    assert any('"tools/call"' in json.loads(line)["frame"] for line in lines)
    # Played back: the real server is not needed any more (the "server" here exits at once).
    played = run_pytest(recorded, NO_SERVER, "test_client.py")
    assert played.returncode == 0, played.stdout + played.stderr


def humidity(project: Path) -> set[int]:
    values = set()
    for line in (project / RECORDING).read_text().splitlines():
        result = json.loads(json.loads(line)["frame"]).get("result", {})
        if "humidity_percent" in result.get("structuredContent", {}):
            values.add(result["structuredContent"]["humidity_percent"])
    return values


def test_replay_fixture_fails_with_the_diff_and_rewrite_accepts_the_change(project: Path) -> None:
    same = run_pytest(project, DEMO, "test_server.py")
    assert same.returncode == 0, same.stdout + same.stderr

    changed = run_pytest(project, CHANGED, "test_server.py")
    assert changed.returncode == 1
    assert "the server's responses differ" in changed.stdout
    assert "/result/structuredContent/humidity_percent" in changed.stdout

    [before] = humidity(project)
    rewritten = run_pytest(project, CHANGED, "test_server.py", "--mcptape-record-mode=rewrite")
    assert rewritten.returncode == 0, rewritten.stdout + rewritten.stderr
    assert humidity(project) == {before + 1}


def test_new_episodes_forwards_what_the_recording_lacks(project: Path) -> None:
    text = (project / RECORDING).read_text().replace("Lisbon", "Porto")
    (project / RECORDING).write_text(text)  # the recording no longer has the call the test makes
    grown = run_pytest(project, DEMO, "test_client.py", "--mcptape-record-mode=new_episodes")
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert "Lisbon" in (project / RECORDING).read_text()
    assert run_pytest(project, NO_SERVER, "test_client.py").returncode == 0


def test_a_typo_in_the_record_mode_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_pytest(write_project(tmp_path), DEMO, "--mcptape-record-mode=onse")
    assert proc.returncode == 4
    assert "invalid choice: 'onse'" in proc.stderr


def test_a_recording_broken_by_a_hand_edit_fails_the_client_test_saying_where(project: Path) -> None:
    with (project / RECORDING).open("a") as f:
        f.write('{"dir": "s2c", "t": 1.5, "frame": "{\\"jsonrpc\\"\n')  # an edit cut short
    proc = run_pytest(project, NO_SERVER, "test_client.py")
    assert proc.returncode == 1
    assert "the MCP recording cannot be played: " in proc.stdout
    lines = len((project / RECORDING).read_text().splitlines())
    assert f"{RECORDING.name}:{lines}: not a line of `mcptape export`" in proc.stdout
