"""`mcptape probe` against Python SDK servers on stdio: a 2026-07-28 server (server/discover, and a
tool that needs input answered input_required and retried with inputResponses), and paged lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

ASKS_INPUT = ROOT / "tests" / "servers" / "asks_input.py"


def test_probe_finds_discover_and_the_multi_round_trip_of_a_modern_server(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptape",
            "probe",
            "--db",
            str(tmp_path / "probe.db"),
            "--only",
            "discover-*",
            "--only",
            "input-required",
            "--only",
            "elicitation-form",
            "--only",
            "sampling",
            "--json",
            "--",
            sys.executable,
            str(ASKS_INPUT),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    verdicts = {s["id"]: (s["status"], s["protocolVersion"]) for s in report["scenarios"]}
    assert verdicts == {
        "discover-2026-07-28": ("pass", "2026-07-28"),
        "input-required": ("pass", "2026-07-28"),
        "elicitation-form": ("pass", "2025-11-25"),  # the same tool asks with a request in 2025
        "sampling": ("not offered", "2025-11-25"),
    }
    detail = {s["id"]: s["detail"] for s in report["scenarios"]}
    assert detail["input-required"] == "trigger-elicitation-request: input_required, 1 retry"
    assert report["ok"] is True


def test_probe_follows_tools_list_page_by_page(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptape",
            "probe",
            "--no-record",
            "--only",
            "tools-list",
            "--json",
            "--",
            sys.executable,
            str(ROOT / "tests" / "servers" / "paged.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (scenario,) = json.loads(proc.stdout)["scenarios"]
    assert (scenario["status"], scenario["detail"]) == ("pass", "5 tools in 3 pages")  # two per page
