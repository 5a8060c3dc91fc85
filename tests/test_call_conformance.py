"""The official conformance suite's client scenarios, played by `mcptape call`, against its baseline.

`@modelcontextprotocol/conformance client` (on the Node 22 that tests/npm installs)
starts each scenario's server and runs tests/conformance/call_client.py against it.
With ``--expected-failures`` the suite exits non-zero both when a scenario outside
the baseline fails and when one inside it passes, so the baseline cannot go stale.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import CONFORMANCE_SUITE as SUITE
from tests.helpers.paths import NODE22, ROOT

DISPATCHER = ROOT / "tests" / "conformance" / "call_client.py"
BASELINE = ROOT / "tests" / "conformance" / "expected_failures.yaml"
# Timing matters in sse-retry (the client must wait the SSE retry delay): these run one
# at a time, each checked to pass outright.
MUST_PASS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
# The suite's other client scenarios, by its own suites (run in parallel inside one run):
# released auth (2025-06-18, 2025-11-25), 2025-03-26 back-compat auth, draft and extensions.
SUITES = ("auth", "backcompat", "draft", "extensions")
KNOWN_FAILING = {"auth/client-credentials-jwt", "auth/cross-app-access-complete-flow"}


def baseline() -> list[str]:
    """The scenario names listed under ``client:`` in the baseline (a flat YAML list)."""
    lines = BASELINE.read_text().splitlines()
    start = lines.index("client:")
    return [line.split("- ", 1)[1].strip() for line in lines[start + 1 :] if line.strip().startswith("- ")]


def run_suite(how: list[str], out: Path) -> subprocess.CompletedProcess[str]:
    assert NODE22.exists() and SUITE.exists(), "tests/npm is not installed: run `cd tests/npm && npm ci`"
    return subprocess.run(
        [
            str(NODE22),
            str(SUITE),
            "client",
            "--command",
            f"{sys.executable} {DISPATCHER}",
            *how,
            "--expected-failures",
            str(BASELINE),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_the_baseline_names_only_scenarios_with_a_reason_and_none_that_must_pass() -> None:
    assert set(baseline()) == KNOWN_FAILING
    text = BASELINE.read_text()
    for name in KNOWN_FAILING:  # each entry follows its comment
        before = text[: text.index(f"- {name}")].rstrip().splitlines()[-1]
        assert before.strip().startswith("#"), name


@pytest.mark.parametrize("scenario", MUST_PASS)
@pytest.mark.slow
def test_conformance_client_scenario_passes(scenario: str, tmp_path: Path) -> None:
    proc = run_suite(["--scenario", scenario], tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    output = proc.stdout + proc.stderr
    assert "OVERALL: PASSED" in output and " 0 failed, 0 warnings" in output, output[-3000:]


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.slow
def test_conformance_client_suite_matches_the_baseline(suite: str, tmp_path: Path) -> None:
    """Every scenario of the suite passes, except those in the baseline, which must still fail."""
    proc = run_suite(["--suite", suite], tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout[proc.stdout.index("SUITE SUMMARY") :]
    ran = re.findall(r"^[✓✗] (\S+): ", summary, re.M)
    assert ran, summary
    for line in summary.splitlines():
        if line[:2] in ("✓ ", "✗ "):
            name = line[2:].split(":")[0]
            assert line.startswith("✓") != (name in KNOWN_FAILING), line
