"""`call --structured`: a usage error is also a validation envelope on stdout, so a pipeline or an
agent that parses stdout gets JSON whatever went wrong (and the one-line error on stderr, exit 1)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("args", "method", "says"),
    [
        (["--structured", "--bogus"], "", "No such option '--bogus'"),
        (
            ["--structured", "--script", "/nonexistent/steps.json"],
            "",
            "--script /nonexistent/steps.json: cannot read it",
        ),
        (
            ["-m", "tools/call", "--tool-args", "[1]", "--structured"],
            "tools/call",
            "--tool-args must be a JSON object",
        ),
        (
            ["--structured", "-m", "ping", "--script", "-"],
            "ping",
            "give either --method or --script, not both",
        ),
    ],
)
def test_a_usage_error_under_structured_is_a_validation_envelope(
    args: list[str], method: str, says: str
) -> None:
    proc = subprocess.run([*MCPTAPE, "call", *args, "--", "true"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"mcptape: error: {proc.stderr.splitlines()[0].removeprefix('mcptape: error: ')}"
    ]
    assert says in proc.stderr
    envelope = json.loads(proc.stdout)
    assert (envelope["success"], envelope["method"], envelope["error"]["category"]) == (
        False,
        method,
        "validation",
    )
    assert says in envelope["error"]["message"]


def test_without_structured_a_usage_error_prints_nothing_on_stdout() -> None:
    proc = subprocess.run(
        [*MCPTAPE, "call", "--bogus", "--", "--structured"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "No such option '--bogus'" in proc.stderr
