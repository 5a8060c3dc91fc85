"""The official conformance suite's client scenarios, played by `mcptape call`, against its baseline.

`@modelcontextprotocol/conformance client` (on the Node 22 that tests/npm installs)
starts each scenario's server and runs tests/conformance/call_client.py against it.
With ``--expected-failures`` the suite exits non-zero both when a scenario outside
the baseline fails and when one inside it passes, so the baseline cannot go stale.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NPM_DIR, ROOT

NODE22 = NPM_DIR / "node_modules" / "node" / "bin" / "node"
SUITE = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
DISPATCHER = ROOT / "tests" / "conformance" / "call_client.py"
BASELINE = ROOT / "tests" / "conformance" / "expected_failures.yaml"
MUST_PASS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
# The suite's client scenarios for released protocol versions (its draft and extension
# scenarios are not in them).
AUTH = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
)


def baseline() -> list[str]:
    """The scenario names listed under ``client:`` in the baseline (a flat YAML list)."""
    lines = BASELINE.read_text().splitlines()
    start = lines.index("client:")
    return [line.split("- ", 1)[1].strip() for line in lines[start + 1 :] if line.strip().startswith("- ")]


def run_scenario(scenario: str, out: Path) -> subprocess.CompletedProcess[str]:
    assert NODE22.exists() and SUITE.exists(), "tests/npm is not installed: run `cd tests/npm && npm ci`"
    return subprocess.run(
        [
            str(NODE22),
            str(SUITE),
            "client",
            "--command",
            f"{sys.executable} {DISPATCHER}",
            "--scenario",
            scenario,
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


def test_the_baseline_names_only_known_scenarios_and_none_that_must_pass() -> None:
    listed = baseline()
    assert listed and set(listed) <= set(AUTH)
    assert not set(listed) & set(MUST_PASS)


@pytest.mark.parametrize("scenario", MUST_PASS + AUTH)
def test_conformance_client_scenario_matches_the_baseline(scenario: str, tmp_path: Path) -> None:
    proc = run_scenario(scenario, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    if scenario not in baseline():
        assert "OVERALL: PASSED" in proc.stdout and " 0 failed, 0 warnings" in proc.stdout, proc.stdout[
            -2000:
        ]
